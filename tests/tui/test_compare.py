from hypothesis import given
from hypothesis import strategies as st

from groove_tui.tui.search.compare import Marker, compare, markers, overlap_at_k


def test_markers_relative_to_other_side():
    left = [1, 2, 3, 4]
    right = [3, 1, 5, 2]
    assert [m.label for m in markers(left, right)] == ["↑1", "↑2", "↓2", "new"]
    assert [m.label for m in markers(right, left)] == ["↑2", "↓1", "new", "↓2"]


def test_compare_counts_and_gone():
    c = compare([1, 2, 3, 4], [3, 1, 5, 2])
    s = c.summary
    assert (s.in_both, s.only_left, s.only_right) == (3, 1, 1)
    # left -> right: 3 moved up (3 -> 1), 1 moved down (1 -> 2), 2 moved down (2 -> 4)
    assert (s.moved_up, s.moved_down, s.unchanged) == (1, 2, 0)
    assert c.left_gone == (5,)
    assert c.right_gone == (4,)
    assert s.k == 4 and s.overlap == 0.75
    assert "overlap@4 0.75" in s.as_text()


def test_identical_and_disjoint_and_empty():
    c = compare([1, 2], [1, 2])
    assert [m.kind for m in c.left] == ["same", "same"]
    assert c.summary.overlap == 1.0
    d = compare([1], [2])
    assert d.summary.overlap == 0.0 and d.left[0].kind == "new" and d.left_gone == (2,)
    e = compare([], [])
    assert e.summary.k == 1 and e.summary.overlap == 0.0


def test_overlap_at_k_explicit():
    assert overlap_at_k([1, 2, 3], [3, 2, 9], 2) == 0.5
    assert overlap_at_k([1], [1], 0) == 0.0
    assert Marker("gone", 3).label == "gone"


@given(st.lists(st.integers(0, 30), unique=True), st.lists(st.integers(0, 30), unique=True))
def test_compare_invariants(left, right):
    c = compare(left, right)
    s = c.summary
    assert s.in_both + s.only_left == len(left)
    assert s.in_both + s.only_right == len(right)
    assert s.moved_up + s.moved_down + s.unchanged == s.in_both
    assert len(c.left) == len(left) and len(c.right) == len(right)
    assert sum(m.kind == "new" for m in c.left) == len(c.right_gone) == s.only_left
    assert 0.0 <= s.overlap <= 1.0
    ups = sum(m.kind == "up" for m in c.right)
    assert ups == s.moved_up
