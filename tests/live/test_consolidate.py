"""HadarE consolidation of real tensors is the exact step-weighted average."""

import pytest

torch = pytest.importorskip("torch")

from gpuweave.live.attempts import split_steps  # noqa: E402
from gpuweave.live.consolidate import consolidate_checkpoints, weighted_state_dict  # noqa: E402


def _model(seed):
    torch.manual_seed(seed)
    return torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.BatchNorm1d(3))


def test_weighted_state_dict_matches_a_hand_average():
    states = [_model(s).state_dict() for s in (1, 2, 3)]
    weights = [10, 30, 60]
    merged = weighted_state_dict(states, weights)
    hand = (
        states[0]["0.weight"].double() * 10 + states[1]["0.weight"].double() * 30 + states[2]["0.weight"].double() * 60
    ) / 100
    assert torch.equal(merged["0.weight"], hand.float())
    assert torch.equal(merged["1.num_batches_tracked"], states[2]["1.num_batches_tracked"])


def test_consolidated_checkpoint_file_is_the_average_of_the_copies(tmp_path):
    paths = []
    for i in range(2):
        paths.append(tmp_path / f"c{i}.ckpt")
        torch.save({"model": _model(i).state_dict(), "steps": 5}, paths[-1])
    consolidate_checkpoints(paths, [1, 3], tmp_path / "model.ckpt")
    got = torch.load(tmp_path / "model.ckpt")["model"]
    want = weighted_state_dict([torch.load(p)["model"] for p in paths], [1, 3])
    assert all(torch.equal(got[k], want[k]) for k in want)


def test_split_steps_is_proportional_and_exact():
    assert split_steps(10, [1.0, 1.0, 2.0]) == [3, 2, 5]
    assert sum(split_steps(1001, [3.3, 7.1])) == 1001
