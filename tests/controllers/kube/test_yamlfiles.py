"""Issue 48: one YAML reader with the same guards for every file we read. A one-document file
(a `--config`, a kubeconfig) nesting too deep, with an alias bomb or a recursive alias, is one
YamlFileError line naming the file, as the manifest reader refuses the same document."""

from __future__ import annotations

from pathlib import Path

import pytest

from controllers.kube.yamlfiles import (
    MAX_DEPTH,
    YamlFileError,
    decode_single_document,
    read_single_document,
)


def test_a_file_nested_1000_deep_is_one_line_not_a_recursion_error(tmp_path: Path) -> None:
    deep = tmp_path / "config.yaml"
    deep.write_text("kind: X\nx: " + "[" * 1000 + "]" * 1000 + "\n")
    with pytest.raises(YamlFileError) as raised:
        read_single_document(deep)
    assert str(raised.value) == f"{deep}: the document nests deeper than {MAX_DEPTH} levels"


def test_a_json_file_nested_deep_is_refused_too(tmp_path: Path) -> None:
    deep = tmp_path / "config.json"
    deep.write_text('{"x": ' + "[" * 5000 + "]" * 5000 + "}")
    with pytest.raises(YamlFileError, match="nests deeper than 100 levels"):
        read_single_document(deep)


def test_an_alias_bomb_is_refused() -> None:
    lines = ["a: &a [x, x, x, x, x, x, x, x, x, x]"]
    for level in range(1, 7):
        previous = chr(ord("a") + level - 1)
        name = chr(ord("a") + level)
        lines.append(f"{name}: &{name} [{', '.join(['*' + previous] * 10)}]")
    with pytest.raises(YamlFileError, match="an alias bomb"):
        decode_single_document("\n".join(lines))


def test_more_than_one_document_is_refused() -> None:
    with pytest.raises(YamlFileError, match="more than one document"):
        decode_single_document("a: 1\n---\nb: 2\n")


def test_a_plain_file_and_an_empty_one_read(tmp_path: Path) -> None:
    plain = tmp_path / "c.yaml"
    plain.write_text("a: &x {b: 1}\nc: *x\n")
    assert read_single_document(plain) == {"a": {"b": 1}, "c": {"b": 1}}
    assert decode_single_document("") is None


def test_a_missing_file_names_it(tmp_path: Path) -> None:
    with pytest.raises(YamlFileError, match=r"missing\.yaml: cannot read: No such file"):
        read_single_document(tmp_path / "missing.yaml")
