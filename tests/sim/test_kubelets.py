"""The simulated kubelets retime a gang once for the pods it started at one instant, with what
retiming at each start would give: progress, finish order, starved stretches."""

from central.sim.kubelet import Kubelets


def test_a_gang_progresses_once_its_last_needed_pod_starts():
    kubelets = Kubelets()
    kubelets.start("a0", "a", 3, "n0", 60.0, 1.0, 0.0)
    kubelets.start("a1", "a", 3, "n0", 60.0, 1.0, 0.0)
    assert kubelets.next_finish() is None  # two of the three it needs: no progress
    kubelets.start("a2", "a", 3, "n0", 60.0, 1.0, 100.0)
    assert kubelets.next_finish() == 160.0
    assert kubelets.gangs["a"].first_progress == 100.0
    assert kubelets.starved(200.0, 50.0)["a"]["for_s"] == 100.0


def test_pods_due_at_once_finish_in_the_order_of_their_gangs_last_start():
    """Retimed at each start, a gang's pods take their places after every pod started before
    its last start: `b0` (started between `a0` and `a1`) comes before both."""
    kubelets = Kubelets()
    kubelets.start("a0", "a", 1, "n0", 60.0, 1.0, 0.0)
    kubelets.start("b0", "b", 1, "n0", 60.0, 1.0, 0.0)
    kubelets.start("a1", "a", 1, "n0", 60.0, 1.0, 0.0)
    assert kubelets.finished(60.0) == ["b0", "a0", "a1"]


def test_a_stop_sees_the_pods_started_before_it():
    kubelets = Kubelets()
    kubelets.start("a0", "a", 2, "n0", 60.0, 1.0, 0.0)
    kubelets.start("a1", "a", 2, "n1", 60.0, 2.0, 0.0)  # spans two nodes: a1 at half speed
    kubelets.stop("a0", 30.0)  # a0 deleted: a1 did 15 s of its work, and waits for a peer again
    kubelets.start("a2", "a", 2, "n1", 60.0, 1.0, 30.0)
    assert kubelets.next_finish() == 75.0  # one node now: a1 has 45 s of work left, a2 60 s
    assert kubelets.finished(1000.0) == ["a1", "a2"]
