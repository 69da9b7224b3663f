"""``benchmarks/bench_host_pages.py`` runs each form of a module's switch in a fresh
process of its own, with the switch set to that form's value."""

from conftest import load_benchmark

bench_host_pages = load_benchmark("bench_host_pages")


def test_each_form_runs_in_a_process_with_its_switch_set(monkeypatch):
    """A form's value reaches the child as it is (``None`` among them, through
    JSON), and the child's audit runs with its module's switch set to it."""
    monkeypatch.setattr(bench_host_pages, "WARMUP_DRAWS", 1_000)
    rows = list(bench_host_pages.rows(["svt4"], 2_000, 1, "mlp-dtype"))
    module, switch, forms = bench_host_pages.SWITCHES["mlp-dtype"]
    assert [r["form"] for r in rows] == list(forms)
    assert (
        [r["switch_value"] for r in rows] == list(forms.values()) == [None, "float32"]
    )
    for r in rows:
        assert r["case"] == "svt4" and r["draws"] == 2_000 and r["audit_seconds"] > 0
