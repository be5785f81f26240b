"""Secret-bearing files the walk leaves out by name: cloud and storage tool configs,
Kubernetes Secret manifests, app configs that hold passwords by convention."""

from __future__ import annotations

from pathlib import Path

import pytest

from indexers.walk import walk


@pytest.mark.parametrize(
    ("rel", "rule"),
    [
        (".s3cfg", ".s3cfg"),
        (".boto", ".boto"),
        ("config/rclone/rclone.conf", "rclone.conf"),
        ("kubeconfig", "kubeconfig*"),
        ("ops/kubeconfig.yaml", "kubeconfig*"),
        ("k8s/secret.yaml", "secret.yaml"),
        ("k8s/secret.yml", "secret.yml"),
        ("k8s/secrets.yaml", "secrets.yaml"),
        ("k8s/db-secret.yaml", "*-secret.yaml"),
        ("k8s/db-secret.yml", "*-secret.yml"),
        ("k8s/app-secrets.yaml", "*-secrets.yaml"),
        ("k8s/app-secrets.yml", "*-secrets.yml"),
        ("vault-token.txt", "vault-token*"),
        (".vault-token", ".vault-token"),
        ("web/wp-config.php", "wp-config.php"),
        ("android/app/google-services.json", "google-services.json"),
        ("ios/App/GoogleService-Info.plist", "googleservice-info.plist"),
        ("android/keystore.properties", "keystore.properties"),
        ("android/local.properties", "local.properties"),
        (".netrc", ".netrc"),
        (".git-credentials", ".git-credentials"),
        ("credentials.json", "*credentials*.json"),
        ("deploy/service-account-prod.json", "*service-account*.json"),
    ],
)
def test_secret_bearing_names_are_never_indexed(tmp_path: Path, rel: str, rule: str) -> None:
    path = tmp_path / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("token: not-a-real-secret\n", encoding="utf-8")
    (tmp_path / "main.py").write_text("x = 1\n", encoding="utf-8")
    result = walk(tmp_path)
    assert [f.path for f in result.files] == ["main.py"]
    assert {s.path: s.reason for s in result.skipped} == {rel: f"may contain secrets ({rule})"}


@pytest.mark.parametrize(
    "rel", ["src/secret_santa.py", "docs/secrets.md", "web/wp-config-sample.php", "k8s/deploy.yaml"]
)
def test_names_that_only_look_alike_are_indexed(tmp_path: Path, rel: str) -> None:
    path = tmp_path / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("x = 1\n", encoding="utf-8")
    assert [f.path for f in walk(tmp_path).files] == [rel]
