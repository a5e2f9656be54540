"""A job's tasks sorted once (FixedLine) come out as the Go-style heap (PriorityQueue) pops
them, for any fixed total order and any arrival order."""

from hypothesis import given
from hypothesis import strategies as st

from central.framework.ordering import FixedLine, PriorityQueue


def less(left: tuple[int, int, int], right: tuple[int, int, int]) -> bool:
    """Priority first (higher first), then index, then a unique id: a task order's shape."""
    return (-left[0], left[1], left[2]) < (-right[0], right[1], right[2])


@given(st.lists(st.tuples(st.integers(0, 3), st.integers(0, 20)), max_size=80), st.randoms())
def test_a_fixed_line_pops_what_the_heap_pops(keys, rnd):
    items = [(priority, index, uid) for uid, (priority, index) in enumerate(keys)]
    rnd.shuffle(items)
    heap, line = PriorityQueue(less, items), FixedLine(less, items)
    assert [heap.pop() for _ in range(len(heap))] == [line.pop() for _ in range(len(line))]
