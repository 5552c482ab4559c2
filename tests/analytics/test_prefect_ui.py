"""What the Prefect UI shows for the seeded flow runs: names that say what a run is for, readable task names, and
the evaluation tables as artifacts."""

from __future__ import annotations

from uuid import UUID


def _flow_run(client, flow_run_id: str):
    return client.read_flow_run(UUID(flow_run_id))


def _artifacts(client, flow_run_id: str) -> dict[str, object]:
    from prefect.client.schemas.filters import ArtifactFilter, ArtifactFilterFlowRunId

    found = client.read_artifacts(artifact_filter=ArtifactFilter(
        flow_run_id=ArtifactFilterFlowRunId(any_=[UUID(flow_run_id)])))
    return {a.key: a for a in found}


def _task_names(client, flow_run_id: str) -> set[str]:
    from prefect.client.schemas.filters import FlowRunFilter, FlowRunFilterId

    runs = client.read_task_runs(flow_run_filter=FlowRunFilter(id=FlowRunFilterId(any_=[UUID(flow_run_id)])))
    return {t.name for t in runs}


def test_flow_runs_are_named_after_their_job_and_publish_evaluations(seeded):
    from prefect.client.orchestration import get_client

    with get_client(sync_client=True) as client:
        training = _flow_run(client, seeded.training_flow_run_id)
        assert training.name == f"train-custom-router {seeded.training_job_id} (preference {seeded.preference_id})"
        assert training.parameters["job_id"] == seeded.training_job_id
        assert {"custom-router-evaluation", "custom-router-run"} <= set(_artifacts(client, str(training.id)))
        assert {"load-dataset", "embed-prompts", "evaluate-held-out-folds", "publish-router"} <= {
            name.rsplit("-", 1)[0] for name in _task_names(client, str(training.id))}

        optimization = _flow_run(client, seeded.optimization_flow_run_id)
        assert optimization.name == f"optimize-prompt {seeded.optimization_run_id}"
        scores = _artifacts(client, str(optimization.id))["prompt-optimization-scores"]
        assert scores.type == "table" and "gpt-4o-mini" in str(scores.data) and "target" in str(scores.data)
        tasks = _task_names(client, str(optimization.id))
        assert {"optimize-target openai/gpt-4o-mini", "pre-optimization-evaluation openai/gpt-4o-mini",
                "optimize openai/gpt-4o-mini", "post-optimization-evaluation openai/gpt-4o-mini",
                "origin-evaluation openai/gpt-4o"} <= tasks
