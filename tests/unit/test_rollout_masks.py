import torch

from grpo_core.rollout.batch import completion_mask


def test_mask_includes_first_eos_even_when_pad_is_eos() -> None:
    # EOS id 0 is also the pad id: the first 0 is a real EOS and must count; the rest is padding.
    ids = torch.tensor([[5, 7, 0, 0, 0], [5, 0, 0, 0, 0], [4, 4, 4, 4, 4]])
    mask, truncated = completion_mask(ids, [0])
    assert mask.tolist() == [[1, 1, 1, 0, 0], [1, 1, 0, 0, 0], [1, 1, 1, 1, 1]]
    assert truncated.tolist() == [False, False, True]


def test_any_of_several_eos_ids_stops() -> None:
    mask, truncated = completion_mask(torch.tensor([[3, 9, 2, 2], [3, 2, 9, 9]]), [2, 9])
    assert mask.tolist() == [[1, 1, 0, 0], [1, 1, 0, 0]]
    assert truncated.tolist() == [False, False]
