# Generated from openapi.json by `make openapi` (scripts/openapi.py): do not edit by hand.
"""Contains all the data models used in inputs/outputs"""

from .billing_change_out import BillingChangeOut
from .billing_change_page import BillingChangePage
from .billing_update import BillingUpdate
from .body_create_file import BodyCreateFile
from .chat_completion_request import ChatCompletionRequest
from .chat_completion_request_messages_item import ChatCompletionRequestMessagesItem
from .chat_completion_request_stream_options_type_0 import ChatCompletionRequestStreamOptionsType0
from .checkpoint import Checkpoint
from .checkpoint_metrics import CheckpointMetrics
from .completion_request import CompletionRequest
from .completion_request_stream_options_type_0 import CompletionRequestStreamOptionsType0
from .cost import Cost
from .create_chat_completion_response_200 import CreateChatCompletionResponse200
from .create_completion_response_200 import CreateCompletionResponse200
from .criterion_counts import CriterionCounts
from .delivery_attempt import DeliveryAttempt
from .download_link import DownloadLink
from .environment_spec import EnvironmentSpec
from .environment_spec_tool_call_format import EnvironmentSpecToolCallFormat
from .episode_stats import EpisodeStats
from .error_body import ErrorBody
from .error_response import ErrorResponse
from .estimate_drivers import EstimateDrivers
from .eval_ import Eval
from .eval_create import EvalCreate
from .eval_create_data_source_config import EvalCreateDataSourceConfig
from .eval_create_metadata_type_0 import EvalCreateMetadataType0
from .eval_create_testing_criteria_item import EvalCreateTestingCriteriaItem
from .eval_data_source_config import EvalDataSourceConfig
from .eval_deleted import EvalDeleted
from .eval_error import EvalError
from .eval_metadata_type_0 import EvalMetadataType0
from .eval_testing_criteria_item import EvalTestingCriteriaItem
from .eval_update import EvalUpdate
from .eval_update_metadata_type_0 import EvalUpdateMetadataType0
from .execution import Execution
from .execution_backend_type_0 import ExecutionBackendType0
from .execution_precision import ExecutionPrecision
from .execution_rollout_engine import ExecutionRolloutEngine
from .execution_sharding_type_0 import ExecutionShardingType0
from .file_deleted import FileDeleted
from .file_object import FileObject
from .fleet import Fleet
from .fleet_worker import FleetWorker
from .format_grader import FormatGrader
from .format_grader_flags_item import FormatGraderFlagsItem
from .format_grader_mode import FormatGraderMode
from .get_fleet_usage_group_by import GetFleetUsageGroupBy
from .get_usage_group_by import GetUsageGroupBy
from .grader_error_rate import GraderErrorRate
from .grader_metrics import GraderMetrics
from .grpo_config import GRPOConfig
from .grpo_config_advantage_estimator import GRPOConfigAdvantageEstimator
from .grpo_config_chat_template_kwargs import GRPOConfigChatTemplateKwargs
from .grpo_config_gfpo_metric import GRPOConfigGfpoMetric
from .grpo_config_importance_sampling_level import GRPOConfigImportanceSamplingLevel
from .grpo_config_kl_estimator import GRPOConfigKlEstimator
from .grpo_config_loss_aggregation import GRPOConfigLossAggregation
from .grpo_config_lr_scheduler import GRPOConfigLrScheduler
from .grpo_config_max_tokens_per_micro_batch_type_0 import GRPOConfigMaxTokensPerMicroBatchType0
from .grpo_config_micro_batch_size_type_0 import GRPOConfigMicroBatchSizeType0
from .grpo_config_off_policy_correction import GRPOConfigOffPolicyCorrection
from .grpo_config_off_policy_level import GRPOConfigOffPolicyLevel
from .grpo_config_precision import GRPOConfigPrecision
from .grpo_config_reasoning_effort import GRPOConfigReasoningEffort
from .grpo_config_recipe_type_0 import GRPOConfigRecipeType0
from .grpo_config_reward_aggregation import GRPOConfigRewardAggregation
from .grpo_config_rollout_engine import GRPOConfigRolloutEngine
from .grpo_config_scale_rewards import GRPOConfigScaleRewards
from .grpo_config_sharding import GRPOConfigSharding
from .grpo_config_vllm_weight_sync import GRPOConfigVllmWeightSync
from .health_config import HealthConfig
from .http_validation_error import HTTPValidationError
from .inference_replica_list import InferenceReplicaList
from .inference_replica_view import InferenceReplicaView
from .integration import Integration
from .job import Job
from .job_budget import JobBudget
from .job_budget_alert_type_0 import JobBudgetAlertType0
from .job_create import JobCreate
from .job_create_metadata_type_0 import JobCreateMetadataType0
from .job_error import JobError
from .job_estimate import JobEstimate
from .job_estimate_confidence import JobEstimateConfidence
from .job_event import JobEvent
from .job_event_level import JobEventLevel
from .job_event_type import JobEventType
from .job_hyperparameters import JobHyperparameters
from .job_metadata_type_0 import JobMetadataType0
from .job_method import JobMethod
from .job_readiness import JobReadiness
from .job_status import JobStatus
from .job_usage import JobUsage
from .job_usage_device_seconds_by_kind import JobUsageDeviceSecondsByKind
from .json_schema_grader import JsonSchemaGrader
from .json_schema_grader_schema import JsonSchemaGraderSchema
from .length_grader import LengthGrader
from .length_grader_mode import LengthGraderMode
from .list_evals_order import ListEvalsOrder
from .list_files_order import ListFilesOrder
from .list_jobs_metadata import ListJobsMetadata
from .list_output_items_order import ListOutputItemsOrder
from .list_output_items_status_type_0 import ListOutputItemsStatusType0
from .list_response_checkpoint import ListResponseCheckpoint
from .list_response_eval import ListResponseEval
from .list_response_file_object import ListResponseFileObject
from .list_response_job import ListResponseJob
from .list_response_job_event import ListResponseJobEvent
from .list_response_output_item import ListResponseOutputItem
from .list_response_run import ListResponseRun
from .list_response_secret import ListResponseSecret
from .list_response_training_run_object import ListResponseTrainingRunObject
from .list_response_webhook_delivery import ListResponseWebhookDelivery
from .list_response_webhook_endpoint import ListResponseWebhookEndpoint
from .list_runs_order import ListRunsOrder
from .lora_config import LoraConfig
from .math_grader import MathGrader
from .math_grader_extract import MathGraderExtract
from .memory_stats import MemoryStats
from .method import Method
from .metrics_page import MetricsPage
from .metrics_point import MetricsPoint
from .model import Model
from .model_detail import ModelDetail
from .model_detail_serving_type_0 import ModelDetailServingType0
from .model_file_info import ModelFileInfo
from .model_list import ModelList
from .model_register import ModelRegister
from .model_serving_type_0 import ModelServingType0
from .multi_grader import MultiGrader
from .multi_grader_graders import MultiGraderGraders
from .off_policy_stats import OffPolicyStats
from .off_policy_stats_staleness import OffPolicyStatsStaleness
from .output_item import OutputItem
from .output_item_datasource_item import OutputItemDatasourceItem
from .output_item_result import OutputItemResult
from .output_item_sample import OutputItemSample
from .output_item_sample_input_item import OutputItemSampleInputItem
from .output_item_sample_output_item import OutputItemSampleOutputItem
from .output_item_sample_usage import OutputItemSampleUsage
from .preflight_config import PreflightConfig
from .price_sheet import PriceSheet
from .price_sheet_device_hour import PriceSheetDeviceHour
from .project_billing import ProjectBilling
from .project_billing_device_hour import ProjectBillingDeviceHour
from .prompt_outcome import PromptOutcome
from .python_grader import PythonGrader
from .readiness_comparison import ReadinessComparison
from .readiness_report import ReadinessReport
from .readiness_report_verdict import ReadinessReportVerdict
from .regex_grader import RegexGrader
from .regex_grader_flags_item import RegexGraderFlagsItem
from .regex_grader_mode import RegexGraderMode
from .reinforcement_method import ReinforcementMethod
from .replica_add import ReplicaAdd
from .report_metrics import ReportMetrics
from .report_metrics_metrics import ReportMetricsMetrics
from .resources import Resources
from .result_counts import ResultCounts
from .run import Run
from .run_checkpoint import RunCheckpoint
from .run_create import RunCreate
from .run_create_data_source import RunCreateDataSource
from .run_create_metadata_type_0 import RunCreateMetadataType0
from .run_data_source import RunDataSource
from .run_deleted import RunDeleted
from .run_metadata_type_0 import RunMetadataType0
from .run_metrics import RunMetrics
from .run_per_model_usage_item import RunPerModelUsageItem
from .run_request import RunRequest
from .run_request_item import RunRequestItem
from .run_response import RunResponse
from .run_response_metadata import RunResponseMetadata
from .run_response_model_grader_token_usage_per_model import RunResponseModelGraderTokenUsagePerModel
from .run_response_sub_rewards import RunResponseSubRewards
from .run_status import RunStatus
from .run_step import RunStep
from .run_step_reported import RunStepReported
from .sample import Sample
from .sample_rewards import SampleRewards
from .samples_response import SamplesResponse
from .sampling_stats import SamplingStats
from .score_model_grader import ScoreModelGrader
from .score_model_grader_input_item import ScoreModelGraderInputItem
from .score_model_grader_sampling_params import ScoreModelGraderSamplingParams
from .scores import Scores
from .secret import Secret
from .secret_create import SecretCreate
from .secret_deleted import SecretDeleted
from .span import Span
from .step_errors import StepErrors
from .step_metrics import StepMetrics
from .step_timing import StepTiming
from .string_check_grader import StringCheckGrader
from .string_check_grader_operation import StringCheckGraderOperation
from .text_similarity_grader import TextSimilarityGrader
from .text_similarity_grader_evaluation_metric import TextSimilarityGraderEvaluationMetric
from .timing import Timing
from .training_run_object import TrainingRunObject
from .trajectory_span import TrajectorySpan
from .trajectory_span_kind import TrajectorySpanKind
from .usage import Usage
from .usage_bucket import UsageBucket
from .usage_bucket_device_seconds_by_kind import UsageBucketDeviceSecondsByKind
from .usage_device_seconds_by_kind import UsageDeviceSecondsByKind
from .usage_kind import UsageKind
from .usage_page import UsagePage
from .validate_request import ValidateRequest
from .validate_response import ValidateResponse
from .validate_response_grader import ValidateResponseGrader
from .validation_error import ValidationError
from .validation_error_context import ValidationErrorContext
from .waiting import Waiting
from .wandb_spec import WandbSpec
from .webhook_delivery import WebhookDelivery
from .webhook_delivery_payload import WebhookDeliveryPayload
from .webhook_delivery_status import WebhookDeliveryStatus
from .webhook_endpoint import WebhookEndpoint
from .webhook_endpoint_create import WebhookEndpointCreate
from .webhook_endpoint_create_event_types_item import WebhookEndpointCreateEventTypesItem
from .webhook_endpoint_created import WebhookEndpointCreated
from .webhook_endpoint_deleted import WebhookEndpointDeleted

__all__ = (
    "BillingChangeOut",
    "BillingChangePage",
    "BillingUpdate",
    "BodyCreateFile",
    "ChatCompletionRequest",
    "ChatCompletionRequestMessagesItem",
    "ChatCompletionRequestStreamOptionsType0",
    "Checkpoint",
    "CheckpointMetrics",
    "CompletionRequest",
    "CompletionRequestStreamOptionsType0",
    "Cost",
    "CreateChatCompletionResponse200",
    "CreateCompletionResponse200",
    "CriterionCounts",
    "DeliveryAttempt",
    "DownloadLink",
    "EnvironmentSpec",
    "EnvironmentSpecToolCallFormat",
    "EpisodeStats",
    "ErrorBody",
    "ErrorResponse",
    "EstimateDrivers",
    "Eval",
    "EvalCreate",
    "EvalCreateDataSourceConfig",
    "EvalCreateMetadataType0",
    "EvalCreateTestingCriteriaItem",
    "EvalDataSourceConfig",
    "EvalDeleted",
    "EvalError",
    "EvalMetadataType0",
    "EvalTestingCriteriaItem",
    "EvalUpdate",
    "EvalUpdateMetadataType0",
    "Execution",
    "ExecutionBackendType0",
    "ExecutionPrecision",
    "ExecutionRolloutEngine",
    "ExecutionShardingType0",
    "FileDeleted",
    "FileObject",
    "Fleet",
    "FleetWorker",
    "FormatGrader",
    "FormatGraderFlagsItem",
    "FormatGraderMode",
    "GetFleetUsageGroupBy",
    "GetUsageGroupBy",
    "GraderErrorRate",
    "GraderMetrics",
    "GRPOConfig",
    "GRPOConfigAdvantageEstimator",
    "GRPOConfigChatTemplateKwargs",
    "GRPOConfigGfpoMetric",
    "GRPOConfigImportanceSamplingLevel",
    "GRPOConfigKlEstimator",
    "GRPOConfigLossAggregation",
    "GRPOConfigLrScheduler",
    "GRPOConfigMaxTokensPerMicroBatchType0",
    "GRPOConfigMicroBatchSizeType0",
    "GRPOConfigOffPolicyCorrection",
    "GRPOConfigOffPolicyLevel",
    "GRPOConfigPrecision",
    "GRPOConfigReasoningEffort",
    "GRPOConfigRecipeType0",
    "GRPOConfigRewardAggregation",
    "GRPOConfigRolloutEngine",
    "GRPOConfigScaleRewards",
    "GRPOConfigSharding",
    "GRPOConfigVllmWeightSync",
    "HealthConfig",
    "HTTPValidationError",
    "InferenceReplicaList",
    "InferenceReplicaView",
    "Integration",
    "Job",
    "JobBudget",
    "JobBudgetAlertType0",
    "JobCreate",
    "JobCreateMetadataType0",
    "JobError",
    "JobEstimate",
    "JobEstimateConfidence",
    "JobEvent",
    "JobEventLevel",
    "JobEventType",
    "JobHyperparameters",
    "JobMetadataType0",
    "JobMethod",
    "JobReadiness",
    "JobStatus",
    "JobUsage",
    "JobUsageDeviceSecondsByKind",
    "JsonSchemaGrader",
    "JsonSchemaGraderSchema",
    "LengthGrader",
    "LengthGraderMode",
    "ListEvalsOrder",
    "ListFilesOrder",
    "ListJobsMetadata",
    "ListOutputItemsOrder",
    "ListOutputItemsStatusType0",
    "ListResponseCheckpoint",
    "ListResponseEval",
    "ListResponseFileObject",
    "ListResponseJob",
    "ListResponseJobEvent",
    "ListResponseOutputItem",
    "ListResponseRun",
    "ListResponseSecret",
    "ListResponseTrainingRunObject",
    "ListResponseWebhookDelivery",
    "ListResponseWebhookEndpoint",
    "ListRunsOrder",
    "LoraConfig",
    "MathGrader",
    "MathGraderExtract",
    "MemoryStats",
    "Method",
    "MetricsPage",
    "MetricsPoint",
    "Model",
    "ModelDetail",
    "ModelDetailServingType0",
    "ModelFileInfo",
    "ModelList",
    "ModelRegister",
    "ModelServingType0",
    "MultiGrader",
    "MultiGraderGraders",
    "OffPolicyStats",
    "OffPolicyStatsStaleness",
    "OutputItem",
    "OutputItemDatasourceItem",
    "OutputItemResult",
    "OutputItemSample",
    "OutputItemSampleInputItem",
    "OutputItemSampleOutputItem",
    "OutputItemSampleUsage",
    "PreflightConfig",
    "PriceSheet",
    "PriceSheetDeviceHour",
    "ProjectBilling",
    "ProjectBillingDeviceHour",
    "PromptOutcome",
    "PythonGrader",
    "ReadinessComparison",
    "ReadinessReport",
    "ReadinessReportVerdict",
    "RegexGrader",
    "RegexGraderFlagsItem",
    "RegexGraderMode",
    "ReinforcementMethod",
    "ReplicaAdd",
    "ReportMetrics",
    "ReportMetricsMetrics",
    "Resources",
    "ResultCounts",
    "Run",
    "RunCheckpoint",
    "RunCreate",
    "RunCreateDataSource",
    "RunCreateMetadataType0",
    "RunDataSource",
    "RunDeleted",
    "RunMetadataType0",
    "RunMetrics",
    "RunPerModelUsageItem",
    "RunRequest",
    "RunRequestItem",
    "RunResponse",
    "RunResponseMetadata",
    "RunResponseModelGraderTokenUsagePerModel",
    "RunResponseSubRewards",
    "RunStatus",
    "RunStep",
    "RunStepReported",
    "Sample",
    "SampleRewards",
    "SamplesResponse",
    "SamplingStats",
    "ScoreModelGrader",
    "ScoreModelGraderInputItem",
    "ScoreModelGraderSamplingParams",
    "Scores",
    "Secret",
    "SecretCreate",
    "SecretDeleted",
    "Span",
    "StepErrors",
    "StepMetrics",
    "StepTiming",
    "StringCheckGrader",
    "StringCheckGraderOperation",
    "TextSimilarityGrader",
    "TextSimilarityGraderEvaluationMetric",
    "Timing",
    "TrainingRunObject",
    "TrajectorySpan",
    "TrajectorySpanKind",
    "Usage",
    "UsageBucket",
    "UsageBucketDeviceSecondsByKind",
    "UsageDeviceSecondsByKind",
    "UsageKind",
    "UsagePage",
    "ValidateRequest",
    "ValidateResponse",
    "ValidateResponseGrader",
    "ValidationError",
    "ValidationErrorContext",
    "Waiting",
    "WandbSpec",
    "WebhookDelivery",
    "WebhookDeliveryPayload",
    "WebhookDeliveryStatus",
    "WebhookEndpoint",
    "WebhookEndpointCreate",
    "WebhookEndpointCreated",
    "WebhookEndpointCreateEventTypesItem",
    "WebhookEndpointDeleted",
)
