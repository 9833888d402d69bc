"""What the served schema promises about refusals, checked on the real app (SQLite and
PostgreSQL): a method a resource lacks is 405 naming all it has, every refusal is a `Problem`
or the documented validation list, and the schema documents them."""

from __future__ import annotations

from timeline_pipeline_tests.api.conftest import Served

WS = "/api/workspaces/inc-1"


def test_a_method_a_resource_lacks_is_405_with_all_its_methods_in_allow(served: Served) -> None:
    cases = {
        f"{WS}/summary": "GET, PUT",
        f"{WS}/entries/1": "GET, PATCH",
        f"{WS}/entries": "POST",
        f"{WS}/timeline": "GET",
    }
    for path, allow in cases.items():
        for method in ("DELETE", "OPTIONS", "TRACE"):
            response = served.client.request(method, path, headers=served.auth)
            assert response.status_code == 405, (method, path)
            assert response.headers["allow"] == allow, (method, path)
            assert response.json()["detail"]["code"] == "method_not_allowed"


def test_a_body_that_is_not_utf8_json_is_a_problem_not_a_bare_string(served: Served) -> None:
    response = served.client.put(
        f"{WS}/summary",
        content=b"\xff\xfe{",
        headers={**served.auth, "Content-Type": "application/json"},
    )
    assert response.status_code in {400, 422}
    detail = response.json()["detail"]
    assert isinstance(detail, list) or set(detail) >= {"code", "message"}, detail


def test_the_schema_documents_every_refusal_an_operation_can_give(served: Served) -> None:
    schema = served.client.get("/api/openapi.json").json()
    for path, item in schema["paths"].items():
        for method, operation in item.items():
            documented = set(operation["responses"])
            assert {"400", "401", "403", "413", "422", "503"} <= documented, (method, path)
            if method in {"patch", "post"} and "{entry_id}" in path:
                assert {"404", "409", "428"} <= documented, (method, path)
    unprocessable = schema["components"]["schemas"]["UnprocessableOut"]
    assert len(unprocessable["anyOf"]) == 2
    after = next(
        p
        for p in schema["paths"]["/api/workspaces/{workspace_id}/evidence"]["get"]["parameters"]
        if p["name"] == "after"
    )
    assert after["schema"]["pattern"]
