"""The suite's order: the files that start processes first, the quick ones after.

`make test` hands whole files to its xdist workers in the collection's order
(`--dist loadfile --no-loadscope-reorder`). A file that starts `hindsight run` or a browser takes
a minute or more, a plain one a few seconds: dealt last, one long file keeps a worker busy while
the other has nothing left to do. Dealt first, the quick files even out the end."""

import pytest

# The longer a marker's tests usually take, the earlier its files run (a file takes the weight
# of its heaviest test).
WEIGHTS = {"launcher": 4, "slow": 3, "worker": 2, "browser": 1}


def file_weight(items: list[pytest.Item]) -> int:
    return max(
        (WEIGHTS.get(mark.name, 0) for item in items for mark in item.iter_markers()), default=0
    )


@pytest.hookimpl(trylast=True)  # after the markers are set (the root conftest marks by file)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    by_file: dict[str, list[pytest.Item]] = {}
    for item in items:
        by_file.setdefault(item.nodeid.split("::", 1)[0], []).append(item)
    weights = {path: file_weight(file_items) for path, file_items in by_file.items()}
    # sorted() is stable: the files of one weight keep their order, and a file's tests theirs.
    items[:] = sorted(items, key=lambda item: -weights[item.nodeid.split("::", 1)[0]])
