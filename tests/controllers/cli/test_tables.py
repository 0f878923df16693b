"""`controllers.cli.tables`: columns that fit the width by cutting only the shrinkable ones,
lists elided with a count, numbers never cut, everything whole without a width."""

from __future__ import annotations

from controllers.cli.tables import TABLE_WIDTH, Cell, fit, table

NAMES = [f"cluster-{i:02d}" for i in range(30)]  # 10 characters each


def test_a_table_that_fits_is_left_aligned_three_spaces_apart() -> None:
    assert table(["A", "LONGER"], [["xy", "1"], ["z", "22"]]) == ("A    LONGER\nxy   1\nz    22\n")


def test_shrinkable_columns_give_way_until_every_line_fits() -> None:
    rows: list[list[Cell]] = [["keep-this-name", NAMES, "some long explanation " * 10]]
    text = table(["NAME", "CLUSTERS", "WHY"], rows, width=80, shrink=(1, 2))
    lines = text.splitlines()
    assert max(len(line) for line in lines) <= 80
    name, clusters, why = lines[1].split("   ", 2)
    assert name == "keep-this-name"  # not shrinkable: whole
    shown, count = clusters.split(" (+")
    kept = shown.split(",")
    assert kept == NAMES[: len(kept)] and kept
    assert count.rstrip(") ") == str(len(NAMES) - len(kept))
    assert why.strip().endswith("...")


def test_the_widest_shrinkable_column_gives_way_first() -> None:
    header = ["A", "B"]
    line = table(header, [["x" * 30, "y" * 100]], width=100, shrink=(0, 1)).splitlines()[1]
    first, second = line.split("   ")
    assert first == "x" * 30  # B alone gives up the excess
    assert len(second) == 100 - 30 - 3
    # when both must give way they end up as wide as each other
    line = table(header, [["x" * 30, "y" * 100]], width=43, shrink=(0, 1)).splitlines()[1]
    first, second = line.split("   ")
    assert (len(first), len(second)) == (20, 20)


def test_numbers_are_never_cut_and_wide_shows_everything() -> None:
    rows = [["-1234567", "4032/-100", "x" * 200]]
    text = table(["A", "B", "C"], rows, width=30, shrink=(0, 1, 2))
    cells = text.splitlines()[1].split()
    assert cells[:2] == ["-1234567", "4032/-100"]
    assert table(["A", "B", "C"], rows, width=None).splitlines()[1].endswith("x" * 200)


def test_default_width_is_120() -> None:
    text = table(["A"], [["z" * 500]], shrink=(0,))
    assert TABLE_WIDTH == 120
    assert max(len(line) for line in text.splitlines()) == 120


def test_fit_keeps_what_fits_and_counts_the_rest() -> None:
    assert fit(NAMES[:3], 100) == "cluster-00,cluster-01,cluster-02"
    assert fit(NAMES[:3], 25) == "cluster-00 (+2)"
    assert fit(NAMES[:3], 4) == "+3"  # narrower than `+3 more`: only a table prevents it
    assert fit("abcdefghij", 8) == "abcde..."


def test_a_list_none_of_whose_items_fits_says_how_many_more() -> None:
    """Not a bare `+9` (issue 48, item 9): the count says what it counts."""
    assert fit(NAMES[:9], 9) == "+9 more"
    rows: list[list[Cell]] = [["x" * 200, NAMES[:9]]]
    line = table(["WHY", "CLUSTERS"], rows, width=14, shrink=(0, 1)).splitlines()[1]
    assert line.endswith("   +9 more")  # the column stays wide enough to say it
    assert line == "x...   +9 more"
