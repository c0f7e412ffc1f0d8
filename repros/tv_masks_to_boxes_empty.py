"""pytorch/vision #9346: ``torchvision.ops.masks_to_boxes`` raises on an all-zero mask.

Up to torchvision 0.25, ``masks_to_boxes`` loops over the masks and takes ``torch.min``
and ``torch.max`` of ``torch.where(mask != 0)``; for a mask with no pixel set (an instance
that vanished after a crop or a threshold, common in segmentation post-processing) that
is an empty tensor and torch raises ``RuntimeError: min(): Expected reduction dim to be
specified for input.numel() == 0``, for the whole batch. PR #9357 (in 0.26.0) gives an
empty mask the box ``[0, 0, 0, 0]``; PR #9358 then computed every box without the loop.

Stages (CPU):
- masks_to_boxes (main): a batch with an empty mask between two set ones, checked
  exactly against its boxes written out (zeros for the empty one), then a seeded random
  batch with two masks emptied, checked exactly against a loop over its non-empty masks
  (``torch.where``, min and max) and zeros for the emptied ones.
- workaround_nonempty_only (workaround): ``masks_to_boxes`` called on the non-empty masks
  only, zeros left for the others; checked against the same boxes.
"""

from __future__ import annotations

import protocol
from protocol import Signature

META = {
    "id": "tv_masks_to_boxes_empty",
    "kind": "bug",
    "title": "torchvision.ops.masks_to_boxes raises on an all-zero mask (before 0.26)",
    "upstream": [
        "https://github.com/pytorch/vision/issues/9346",
        "https://github.com/pytorch/vision/pull/9357",
    ],
    "description": (
        "torchvision.ops.masks_to_boxes raises RuntimeError: min(): Expected reduction dim to be "
        "specified for input.numel() == 0 when one of the masks is all zeros. In the 0.25.0 wheel "
        "(git 8ac84ee75afb1c327902156b5336f56ad63b7e2f) torchvision/ops/boxes.py:513 takes 'y, x = "
        "torch.where(mask != 0)' per mask and :515 'torch.min(x)' of it (the same lines in 0.24.1, "
        "git d801a34632023859a0a274803d6abaf0a45d77a5). Fixed by PR #9357 ('Fix masks_to_boxes for "
        "empty masks', fixes #9346): in the 0.26.0 wheel (git "
        "336d36e8db990a905498c73933e35231876e28bc) boxes.py:519 finds the empty masks "
        "('empty_masks = ~torch.any(non_zero_rows, dim=1)') and :531 sets their boxes to zeros, "
        "without the loop (PR #9358); 0.27.1 the same at :548 and :560. The merge commit is not "
        "cited: the vision repository could not be fetched here, so the lines are read from the "
        "released wheels. Workaround: call masks_to_boxes on the non-empty masks only "
        "(masks.flatten(1).any(1)) and give the others zeros; torchvision 0.26.0 is the fix."
    ),
    "requires": ["torchvision"],
    "expect": [
        {"when": {"torchvision": ">=0.26"}, "status": "pass",
         "note": "PR #9357: torchvision/ops/boxes.py:519 finds the empty masks and :531 gives them "
                 "zero boxes in the 0.26.0 wheel"},
        {"when": {"torchvision": "<0.26"}, "status": "fail",
         "note": "torchvision/ops/boxes.py:513 'y, x = torch.where(mask != 0)' and :515 "
                 "'torch.min(x)' per mask in the 0.25.0 wheel (the same lines in 0.24.1)"},
    ],
}

SIGNATURES = [
    Signature(
        "empty_mask_min_without_dim", exc="RuntimeError", stage="masks_to_boxes",
        pattern=r"min\(\): Expected reduction dim to be specified for input\.numel\(\) == 0",
        note="torch.min of the empty torch.where of an all-zero mask (vision #9346); recorded on "
             "torchvision 0.24.1"),
]

# mask 0 covers rows 1-2, columns 2-3; mask 1 is empty; mask 2 has two pixels at its corners
EXPECTED_BOXES = [[2.0, 1.0, 3.0, 2.0], [0.0, 0.0, 0.0, 0.0], [0.0, 0.0, 5.0, 4.0]]
EMPTIED = (1, 4)  # the masks of the random batch set to zero


def written_masks():
    import torch

    masks = torch.zeros(3, 5, 6)
    masks[0, 1:3, 2:4] = 1
    masks[2, 4, 0] = 1
    masks[2, 0, 5] = 1
    return masks


def random_masks():
    import torch

    gen = torch.Generator().manual_seed(0)
    masks = torch.rand(6, 7, 9, generator=gen) > 0.85
    masks[list(EMPTIED)] = False
    return masks


def loop_boxes(masks):
    """Boxes as (x1, y1, x2, y2) by a plain loop: min and max of each non-empty mask's pixels."""
    import torch

    boxes = torch.zeros(masks.shape[0], 4)
    for i, mask in enumerate(masks):
        y, x = torch.where(mask != 0)
        if x.numel():
            boxes[i] = torch.stack([x.min(), y.min(), x.max(), y.max()]).float()
    return boxes


def check_boxes(s, boxes_of):
    """The written batch's boxes exactly, then the random batch's against the loop."""
    import torch

    boxes = boxes_of(written_masks())
    s.note("boxes", boxes.tolist())
    s.check_close(boxes, torch.tensor(EXPECTED_BOXES), what="boxes of the written masks (an empty one "
                  "between two set ones)", rtol=0, atol=0)
    masks = random_masks()
    s.note("random_masks_empty", [i for i in range(masks.shape[0]) if not masks[i].any()])
    s.check_close(boxes_of(masks), loop_boxes(masks), what="boxes of a random batch vs a loop over its "
                  "non-empty masks, zeros for masks %s" % (list(EMPTIED),), rtol=0, atol=0)


def stage_masks_to_boxes(s):
    import torchvision
    from torchvision.ops import masks_to_boxes

    s.note("torchvision", torchvision.__version__)
    check_boxes(s, masks_to_boxes)


def nonempty_only(masks):
    import torch
    from torchvision.ops import masks_to_boxes

    boxes = torch.zeros(masks.shape[0], 4)
    nonempty = masks.flatten(1).any(1)
    boxes[nonempty] = masks_to_boxes(masks[nonempty])
    return boxes


def stage_workaround(s):
    check_boxes(s, nonempty_only)


def main(r):
    r.stage("masks_to_boxes", stage_masks_to_boxes, requires=["torchvision"])
    r.stage("workaround_nonempty_only", stage_workaround, role="workaround", requires=["torchvision"])


if __name__ == "__main__":
    protocol.main(META, SIGNATURES, main)
