from memserver.cli import main

main()
