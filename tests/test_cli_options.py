"""The option types of the command line: the one comma-separated list parser, and
the lists built on it through argparse."""

import argparse

import pytest

from mcdp.cli._options import comma_list, dims, integer, one_of, typed

from conftest import assert_one_line_error


def test_comma_list_reads_each_item():
    parse = comma_list(integer("--xs", 1))
    assert parse("3,1e2,3") == [3, 100, 3]
    assert comma_list(integer("--xs", 1), unique=True)("3,1e2,3") == [3, 100]
    assert comma_list(one_of("--dist", ("uniform", "normal")))("normal") == ["normal"]


def test_comma_list_skips_empty_items_and_spaces():
    parse = comma_list(one_of("--dist", ("uniform", "normal")))
    assert parse(" uniform , ,normal,") == ["uniform", "normal"]
    assert parse("") == parse(",, ") == []
    refuse = comma_list(integer("--xs", 1), empty="Expected --xs to name one.")
    with pytest.raises(ValueError, match="^Expected --xs to name one.$"):
        refuse(" , ")


@pytest.mark.parametrize(
    "parse,text,fragments",
    [
        (comma_list(integer("--xs", 1)), "1,x,2", ["--xs", "'x'"]),
        (comma_list(integer("--xs", 1)), "1,0", ["--xs", ">= 1", "got 0"]),
        (comma_list(one_of("--dist", ("a", "b"))), "a,c", ["--dist", "'c'", "a, b"]),
        (dims("--dims"), "1-4,9-3", ["--dims", "'9-3'"]),
        (dims("--dims"), ",", ["--dims", "at least one dimension"]),
    ],
)
def test_a_bad_item_names_the_option(parse, text, fragments):
    with pytest.raises(ValueError) as info:
        parse(text)
    for fragment in fragments:
        assert fragment in str(info.value)
    with pytest.raises(argparse.ArgumentTypeError, match=str(info.value)[:8]):
        typed(parse)(text)  # what argparse prints after "argument --name:"


def test_dims_mix_lists_and_ranges():
    assert dims("--dims")("8, 1-3,2,") == [1, 2, 3, 8]


def test_list_options_of_the_command_line(capsys, tmp_path):
    grid = ["grid", "acl2022", "--draws", "10", "--out", str(tmp_path / "g.json")]
    assert_one_line_error(capsys, grid + ["--epsilons", "1,,x"], "--epsilons", "'x'")
    assert_one_line_error(capsys, grid + ["--dims", "2, 0"], "--dims", "got 0")
    assert_one_line_error(capsys, ["violations", "--dist", ", ,"], "--dist", "uniform")
    assert_one_line_error(capsys, ["figures", "--only", "a,,b"], "--only", "'a'")
