from memserver.cli import run

run()
