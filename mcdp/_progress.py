"""The progress bar that every long run shows on a terminal (tqdm)."""

from __future__ import annotations


def progress_bar(enabled: bool, total: int | None, desc: str):
    """A tqdm bar that appears only on a terminal, after 2 s, and only if
    ``enabled``; it leaves nothing behind when closed."""
    from tqdm.auto import tqdm

    return tqdm(
        total=total,
        desc=desc,
        unit="draw",
        unit_scale=True,
        delay=2.0,
        disable=None if enabled else True,
        leave=False,
        dynamic_ncols=True,
    )
