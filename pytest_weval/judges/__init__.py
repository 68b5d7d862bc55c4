"""LLM judges: panel selection, request content, reply parsing, consensus, agreement.

No network here: the caller passes ``ask(judge, messages, temperature, max_tokens) -> str``,
an async function that performs one model call and raises on transport failure.
"""

from .agreement import judge_agreement, krippendorff_interval, run_judge_agreement
from .config import (
    BACKUP_JUDGE,
    DEFAULT_JUDGES,
    DEFAULT_KEYPOINT_MODELS,
    JUDGE_MAX_TOKENS,
    JUDGE_TEMPERATURE,
    KEYPOINT_MAX_TOKENS,
    KEYPOINT_TEMPERATURE,
    JudgeConfigError,
    JudgePanel,
    JudgeSpec,
    select_judges,
)
from .consensus import (
    ALL_FAILED,
    JudgeOutcome,
    consensus_assessment,
    failed_judges,
    judge_points,
    judge_points_with,
)
from .keypoints import extract_key_points, parse_key_points
from .parse import SCALE_5, SCALE_9, JudgeReplyError, Scale, get_scale, parse_judge_reply
from .prompts import build_judge_messages, build_transcript, prompt_context_text

__all__ = [
    "JudgeSpec",
    "JudgePanel",
    "JudgeConfigError",
    "select_judges",
    "DEFAULT_JUDGES",
    "BACKUP_JUDGE",
    "DEFAULT_KEYPOINT_MODELS",
    "JUDGE_TEMPERATURE",
    "JUDGE_MAX_TOKENS",
    "KEYPOINT_TEMPERATURE",
    "KEYPOINT_MAX_TOKENS",
    "parse_judge_reply",
    "JudgeReplyError",
    "Scale",
    "SCALE_9",
    "SCALE_5",
    "get_scale",
    "build_judge_messages",
    "build_transcript",
    "prompt_context_text",
    "JudgeOutcome",
    "ALL_FAILED",
    "failed_judges",
    "judge_points",
    "judge_points_with",
    "consensus_assessment",
    "judge_agreement",
    "run_judge_agreement",
    "krippendorff_interval",
    "extract_key_points",
    "parse_key_points",
]
