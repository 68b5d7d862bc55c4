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
    Ask,
    JudgeOutcome,
    consensus_assessment,
    judge_points,
    judge_points_with,
)
from .keypoints import extract_key_points, parse_key_points
from .parse import SCALE_5, SCALE_9, JudgeReplyError, Scale, get_scale, parse_judge_reply
from .prompts import build_judge_messages, build_transcript, prompt_context_text, shared_prefix_chars

__all__ = [
    "ALL_FAILED",
    "BACKUP_JUDGE",
    "DEFAULT_JUDGES",
    "DEFAULT_KEYPOINT_MODELS",
    "JUDGE_MAX_TOKENS",
    "JUDGE_TEMPERATURE",
    "KEYPOINT_MAX_TOKENS",
    "KEYPOINT_TEMPERATURE",
    "SCALE_5",
    "SCALE_9",
    "Ask",
    "JudgeConfigError",
    "JudgeOutcome",
    "JudgePanel",
    "JudgeReplyError",
    "JudgeSpec",
    "Scale",
    "build_judge_messages",
    "build_transcript",
    "consensus_assessment",
    "extract_key_points",
    "get_scale",
    "judge_agreement",
    "judge_points",
    "judge_points_with",
    "krippendorff_interval",
    "parse_judge_reply",
    "parse_key_points",
    "prompt_context_text",
    "run_judge_agreement",
    "select_judges",
    "shared_prefix_chars",
]
