"""A small client for the webserver's GraphQL API: the queries and mutations an operator's UI
sends, written out, so the system test drives Dagster exactly as a person would."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import httpx

LOCATIONS = """
query Locations {
  workspaceOrError {
    __typename
    ... on Workspace {
      locationEntries {
        name
        loadStatus
        locationOrLoadError {
          __typename
          ... on RepositoryLocation { name repositories { name } }
          ... on PythonError { message }
        }
      }
    }
    ... on PythonError { message }
  }
}
"""

PARTITION_KEYS = """
query PartitionKeys($assetKey: AssetKeyInput!) {
  assetNodeOrError(assetKey: $assetKey) {
    __typename
    ... on AssetNode { partitionKeysByDimension { name partitionKeys } }
    ... on Error { message }
  }
}
"""

RUNS = """
query Runs($filter: RunsFilter) {
  runsOrError(filter: $filter) {
    __typename
    ... on Runs {
      results {
        runId jobName status creationTime startTime endTime
        tags { key value }
      }
    }
    ... on Error { message }
  }
}
"""

SCHEDULE_TICKS = """
query ScheduleTicks($selector: ScheduleSelector!) {
  scheduleOrError(scheduleSelector: $selector) {
    __typename
    ... on Schedule {
      id
      scheduleState { status ticks(limit: 50) { status timestamp runIds skipReason } }
    }
    ... on Error { message }
  }
}
"""

STOP_SCHEDULE = """
mutation StopSchedule($id: String!) {
  stopRunningSchedule(id: $id) {
    __typename
    ... on ScheduleStateResult { scheduleState { status } }
    ... on Error { message }
  }
}
"""

SENSOR_TICKS = """
query SensorTicks($selector: SensorSelector!) {
  sensorOrError(sensorSelector: $selector) {
    __typename
    ... on Sensor {
      sensorState { status ticks(limit: 50) { status timestamp runIds skipReason } }
    }
    ... on Error { message }
  }
}
"""

LAUNCHPAD_PARTITION = """
query LaunchpadPartition($repo: RepositorySelector!, $set: String!, $partition: String!) {
  partitionSetOrError(repositorySelector: $repo, partitionSetName: $set) {
    __typename
    ... on PartitionSet {
      partition(partitionName: $partition) {
        name
        runConfigOrError { __typename ... on PartitionRunConfig { yaml } ... on Error { message } }
        tagsOrError { __typename ... on PartitionTags { results { key value } }
                      ... on Error { message } }
      }
    }
    ... on Error { message }
  }
}
"""

LAUNCH_RUN = """
mutation LaunchRun($params: ExecutionParams!) {
  launchRun(executionParams: $params) {
    __typename
    ... on LaunchRunSuccess { run { runId } }
    ... on RunConfigValidationInvalid { errors { message } }
    ... on Error { message }
  }
}
"""

LAUNCH_BACKFILL = """
mutation LaunchBackfill($params: LaunchBackfillParams!) {
  launchPartitionBackfill(backfillParams: $params) {
    __typename
    ... on LaunchBackfillSuccess { backfillId }
    ... on Error { message }
  }
}
"""

BACKFILL = """
query Backfill($id: String!) {
  partitionBackfillOrError(backfillId: $id) {
    __typename
    ... on PartitionBackfill { id status partitionNames }
    ... on Error { message }
  }
}
"""

MATERIALIZATIONS = """
query Materializations($assetKey: AssetKeyInput!, $partitions: [String!]) {
  assetOrError(assetKey: $assetKey) {
    __typename
    ... on Asset { assetMaterializations(partitions: $partitions) { runId partition } }
    ... on Error { message }
  }
}
"""


class GraphQLError(AssertionError):
    """The API answered with errors, or with an error type where data was expected."""


@dataclass(frozen=True)
class Run:
    run_id: str
    job_name: str
    status: str
    created: float
    started: float | None
    ended: float | None
    tags: dict[str, str]

    @classmethod
    def from_json(cls, raw: dict[str, Any]) -> Run:
        return cls(
            run_id=raw["runId"],
            job_name=raw["jobName"],
            status=raw["status"],
            created=float(raw["creationTime"]),
            started=raw["startTime"],
            ended=raw["endTime"],
            tags={tag["key"]: tag["value"] for tag in raw["tags"]},
        )


@dataclass(frozen=True)
class Tick:
    status: str
    timestamp: float
    run_ids: list[str]
    skip_reason: str | None


@dataclass(frozen=True)
class RepositoryAddress:
    location: str
    repository: str

    def selector(self) -> dict[str, str]:
        return {"repositoryLocationName": self.location, "repositoryName": self.repository}


def _tags(pairs: dict[str, str]) -> list[dict[str, str]]:
    return [{"key": key, "value": value} for key, value in sorted(pairs.items())]


def _expect(payload: dict[str, Any], typename: str, what: str) -> dict[str, Any]:
    if payload.get("__typename") != typename:
        detail = payload.get("message") or payload.get("errors") or payload
        raise GraphQLError(
            f"{what}: expected {typename}, got {payload.get('__typename')}: {detail}"
        )
    return payload


class DagsterGraphQL:
    """POST /graphql on the webserver; every call raises GraphQLError on an error answer."""

    def __init__(self, base_url: str, *, timeout: float = 30.0) -> None:
        # trust_env=False: a proxy from the environment must never see loopback traffic.
        self._http = httpx.Client(base_url=base_url, timeout=timeout, trust_env=False)

    def close(self) -> None:
        self._http.close()

    def execute(self, document: str, variables: dict[str, Any] | None = None) -> dict[str, Any]:
        response = self._http.post("/graphql", json={"query": document, "variables": variables})
        if response.status_code != 200:
            raise GraphQLError(f"HTTP {response.status_code} from /graphql")
        body = response.json()
        if body.get("errors"):
            messages = "; ".join(str(error.get("message")) for error in body["errors"])
            raise GraphQLError(f"GraphQL errors: {messages}")
        data: dict[str, Any] = body["data"]
        return data

    def answers(self) -> bool:
        """True once the webserver serves GraphQL (it listens only after loading the workspace)."""
        try:
            self.execute("query { version }")
        except (httpx.HTTPError, GraphQLError):
            return False
        return True

    # --- reads ----------------------------------------------------------------------------------

    def repository(self) -> RepositoryAddress | None:
        """The single loaded code location and repository, or None while it is loading."""
        workspace = self.execute(LOCATIONS)["workspaceOrError"]
        _expect(workspace, "Workspace", "workspace")
        entries = workspace["locationEntries"]
        if len(entries) != 1 or entries[0]["loadStatus"] != "LOADED":
            return None
        location = entries[0]["locationOrLoadError"]
        _expect(location or {}, "RepositoryLocation", f"code location {entries[0]['name']}")
        (repository,) = location["repositories"]
        return RepositoryAddress(location["name"], repository["name"])

    def partition_keys(self, asset_key: str) -> list[str]:
        node = self.execute(PARTITION_KEYS, {"assetKey": {"path": [asset_key]}})
        found = _expect(node["assetNodeOrError"], "AssetNode", f"asset {asset_key}")
        (dimension,) = found["partitionKeysByDimension"]
        keys: list[str] = dimension["partitionKeys"]
        return keys

    def runs(self, *, job: str | None = None, tags: dict[str, str] | None = None) -> list[Run]:
        run_filter: dict[str, Any] = {}
        if job is not None:
            run_filter["pipelineName"] = job
        if tags:
            run_filter["tags"] = _tags(tags)
        data = self.execute(RUNS, {"filter": run_filter})["runsOrError"]
        results = _expect(data, "Runs", "runs")["results"]
        return [Run.from_json(raw) for raw in results]

    def schedule_ticks(self, repo: RepositoryAddress, schedule: str) -> list[Tick]:
        selector = {**repo.selector(), "scheduleName": schedule}
        data = self.execute(SCHEDULE_TICKS, {"selector": selector})["scheduleOrError"]
        state = _expect(data, "Schedule", f"schedule {schedule}")["scheduleState"]
        return [_tick(raw) for raw in state["ticks"]]

    def stop_schedule(self, repo: RepositoryAddress, schedule: str) -> str:
        """What the UI's schedule toggle does; returns the schedule's new status."""
        selector = {**repo.selector(), "scheduleName": schedule}
        data = self.execute(SCHEDULE_TICKS, {"selector": selector})["scheduleOrError"]
        schedule_id = _expect(data, "Schedule", f"schedule {schedule}")["id"]
        result = self.execute(STOP_SCHEDULE, {"id": schedule_id})["stopRunningSchedule"]
        state = _expect(result, "ScheduleStateResult", f"stop {schedule}")["scheduleState"]
        status: str = state["status"]
        return status

    def sensor_ticks(self, repo: RepositoryAddress, sensor: str) -> list[Tick]:
        selector = {
            "repositoryLocationName": repo.location,
            "repositoryName": repo.repository,
            "sensorName": sensor,
        }
        data = self.execute(SENSOR_TICKS, {"selector": selector})["sensorOrError"]
        state = _expect(data, "Sensor", f"sensor {sensor}")["sensorState"]
        return [_tick(raw) for raw in state["ticks"]]

    def launchpad(
        self, repo: RepositoryAddress, partition_set: str, partition: str
    ) -> tuple[str, dict[str, str]]:
        """What the UI's launchpad pre-fills for a partition: its run config YAML and tags."""
        data = self.execute(
            LAUNCHPAD_PARTITION,
            {"repo": repo.selector(), "set": partition_set, "partition": partition},
        )["partitionSetOrError"]
        found = _expect(data, "PartitionSet", f"partition set {partition_set}")["partition"]
        config = _expect(found["runConfigOrError"], "PartitionRunConfig", "partition config")
        tags = _expect(found["tagsOrError"], "PartitionTags", "partition tags")
        return config["yaml"], {tag["key"]: tag["value"] for tag in tags["results"]}

    def backfill_status(self, backfill_id: str) -> str:
        data = self.execute(BACKFILL, {"id": backfill_id})["partitionBackfillOrError"]
        status: str = _expect(data, "PartitionBackfill", f"backfill {backfill_id}")["status"]
        return status

    def materialization_runs(self, asset_key: str, partition: str) -> list[str]:
        data = self.execute(
            MATERIALIZATIONS, {"assetKey": {"path": [asset_key]}, "partitions": [partition]}
        )["assetOrError"]
        events = _expect(data, "Asset", f"asset {asset_key}")["assetMaterializations"]
        return [event["runId"] for event in events if event["partition"] == partition]

    # --- launches -------------------------------------------------------------------------------

    def launch_run(
        self, repo: RepositoryAddress, job: str, run_config_yaml: str, tags: dict[str, str]
    ) -> str:
        params = {
            "selector": {**repo.selector(), "jobName": job},
            "runConfigData": run_config_yaml,
            "executionMetadata": {"tags": _tags(tags)},
        }
        data = self.execute(LAUNCH_RUN, {"params": params})["launchRun"]
        run_id: str = _expect(data, "LaunchRunSuccess", f"launch of {job}")["run"]["runId"]
        return run_id

    def launch_backfill(
        self, repo: RepositoryAddress, partition_set: str, partitions: list[str]
    ) -> str:
        params = {
            "selector": {"partitionSetName": partition_set, "repositorySelector": repo.selector()},
            "partitionNames": partitions,
        }
        data = self.execute(LAUNCH_BACKFILL, {"params": params})["launchPartitionBackfill"]
        backfill_id: str = _expect(data, "LaunchBackfillSuccess", "backfill")["backfillId"]
        return backfill_id


def _tick(raw: dict[str, Any]) -> Tick:
    return Tick(raw["status"], float(raw["timestamp"]), list(raw["runIds"]), raw["skipReason"])
