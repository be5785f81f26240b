from pathlib import Path

import pytest

from memserver.config import Settings, load_settings, settings_from_toml
from memserver.core.errors import ConfigError

DEFAULT_TOML = Path(__file__).parents[1] / "configs" / "default.toml"


def test_default_toml_states_exactly_the_code_defaults() -> None:
    assert settings_from_toml(DEFAULT_TOML) == Settings()


def test_default_toml_lists_every_setting() -> None:
    import dataclasses
    import tomllib

    data = tomllib.loads(DEFAULT_TOML.read_text())
    for section in dataclasses.fields(Settings):
        keys = {f.name for f in dataclasses.fields(getattr(Settings(), section.name))}
        assert set(data[section.name]) == keys, section.name


def test_layers_apply_in_order(tmp_path: Path) -> None:
    user = tmp_path / "user.toml"
    user.write_text("[recall]\nk = 7\nbudget_tokens = 1000\n")
    (tmp_path / ".memserver.toml").write_text("[recall]\nk = 8\n")
    env = {"MEMSERVER_RECALL_BUDGET_TOKENS": "2000", "MEMSERVER_INDEX_DIR": "/x"}
    s = load_settings(tmp_path, env=env, user_config=user, overrides={"recall": {"max_files": 2}})
    assert (s.recall.k, s.recall.budget_tokens, s.recall.max_files) == (8, 2000, 2)
    assert s.index.dir == "/x"


def test_unknown_and_invalid_settings_are_clear_errors(tmp_path: Path) -> None:
    (tmp_path / ".memserver.toml").write_text("[recall]\nkk = 1\n")
    with pytest.raises(ConfigError, match="unknown setting"):
        load_settings(tmp_path, env={}, user_config=tmp_path / "none.toml")
    with pytest.raises(ConfigError, match="not a valid int"):
        load_settings(None, env={"MEMSERVER_RECALL_K": "ten"}, user_config=tmp_path / "n.toml")
