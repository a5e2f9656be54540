"""The compiled floor places exactly as the rule it states: for each pod in order, the
feasible node (every resource, a pod slot) with the highest most-allocated score after the
placement, ties to the lowest index."""

from __future__ import annotations

import numpy as np
import pytest

from central.bench import floor


def reference(idle, alloc, slots, requests):
    idle, slots, out = idle.copy(), slots.copy(), []
    for req in requests:
        best, best_score = -1, -np.inf
        for n in range(len(idle)):
            left = idle[n] - req
            if slots[n] <= 0 or (left < 0).any():
                continue
            score = sum(1.0 - left[d] / alloc[n, d] for d in range(len(req)) if alloc[n, d] > 0)
            if score > best_score:
                best, best_score = n, score
        out.append(best)
        if best >= 0:
            idle[best] -= req
            slots[best] -= 1
    return out


@pytest.mark.skipif(floor.unavailable() is not None, reason=str(floor.unavailable()))
def test_matches_the_stated_rule_on_random_clusters():
    rng = np.random.default_rng(3)
    for _ in range(5):
        alloc = rng.choice([4.0, 8.0, 16.0, 32.0], size=(30, 3))
        alloc[:, 2] = rng.choice([0.0, 2.0], size=30)  # a resource most nodes lack
        slots = rng.integers(1, 6, size=30)
        requests = rng.choice([0.5, 1.0, 2.0, 4.0], size=(200, 3))
        requests[:, 2] = rng.choice([0.0, 0.0, 1.0], size=200)
        placed, _, nodes = floor.place(alloc, alloc, slots, requests)
        expected = reference(alloc, alloc, slots, requests)
        assert list(nodes) == expected
        assert placed == sum(1 for n in expected if n >= 0) and 0 < placed < 200
