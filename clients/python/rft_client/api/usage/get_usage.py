# Generated from openapi.json by `make openapi` (scripts/openapi.py): do not edit by hand.
from http import HTTPStatus
from typing import Any

import httpx

from ... import errors
from ...client import AuthenticatedClient, Client
from ...models.error_response import ErrorResponse
from ...models.get_usage_group_by import GetUsageGroupBy
from ...models.usage_kind import UsageKind
from ...models.usage_page import UsagePage
from ...types import UNSET, Response, Unset


def _get_kwargs(
    *,
    start_time: int | None | Unset = UNSET,
    end_time: int | None | Unset = UNSET,
    job_id: None | str | Unset = UNSET,
    kind: None | Unset | UsageKind = UNSET,
    group_by: GetUsageGroupBy | Unset = "day",
    limit: int | Unset = 100,
    authorization: None | str | Unset = UNSET,
) -> dict[str, Any]:
    headers: dict[str, Any] = {}
    if not isinstance(authorization, Unset):
        headers["authorization"] = authorization

    params: dict[str, Any] = {}

    json_start_time: int | None | Unset
    if isinstance(start_time, Unset):
        json_start_time = UNSET
    else:
        json_start_time = start_time
    params["start_time"] = json_start_time

    json_end_time: int | None | Unset
    if isinstance(end_time, Unset):
        json_end_time = UNSET
    else:
        json_end_time = end_time
    params["end_time"] = json_end_time

    json_job_id: None | str | Unset
    if isinstance(job_id, Unset):
        json_job_id = UNSET
    else:
        json_job_id = job_id
    params["job_id"] = json_job_id

    json_kind: None | str | Unset
    if isinstance(kind, Unset):
        json_kind = UNSET
    elif isinstance(kind, str):
        json_kind = kind
    else:
        json_kind = kind
    params["kind"] = json_kind

    json_group_by: str | Unset = UNSET
    if not isinstance(group_by, Unset):
        json_group_by = group_by

    params["group_by"] = json_group_by

    params["limit"] = limit

    params = {k: v for k, v in params.items() if v is not UNSET and v is not None}

    _kwargs: dict[str, Any] = {
        "method": "get",
        "url": "/v1/usage",
        "params": params,
    }

    _kwargs["headers"] = headers
    return _kwargs


def _parse_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> ErrorResponse | UsagePage | None:
    if response.status_code == 200:
        response_200 = UsagePage.from_dict(response.json())

        return response_200

    if response.status_code == 400:
        response_400 = ErrorResponse.from_dict(response.json())

        return response_400

    if response.status_code == 401:
        response_401 = ErrorResponse.from_dict(response.json())

        return response_401

    if response.status_code == 404:
        response_404 = ErrorResponse.from_dict(response.json())

        return response_404

    if response.status_code == 409:
        response_409 = ErrorResponse.from_dict(response.json())

        return response_409

    if response.status_code == 413:
        response_413 = ErrorResponse.from_dict(response.json())

        return response_413

    if response.status_code == 422:
        response_422 = ErrorResponse.from_dict(response.json())

        return response_422

    if response.status_code == 429:
        response_429 = ErrorResponse.from_dict(response.json())

        return response_429

    if client.raise_on_unexpected_status:
        raise errors.UnexpectedStatus(response.status_code, response.content)
    else:
        return None


def _build_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> Response[ErrorResponse | UsagePage]:
    return Response(
        status_code=HTTPStatus(response.status_code),
        content=response.content,
        headers=response.headers,
        parsed=_parse_response(client=client, response=response),
    )


def sync_detailed(
    *,
    client: AuthenticatedClient | Client,
    start_time: int | None | Unset = UNSET,
    end_time: int | None | Unset = UNSET,
    job_id: None | str | Unset = UNSET,
    kind: None | Unset | UsageKind = UNSET,
    group_by: GetUsageGroupBy | Unset = "day",
    limit: int | Unset = 100,
    authorization: None | str | Unset = UNSET,
) -> Response[ErrorResponse | UsagePage]:
    """Get Usage

     Device-seconds (by device kind), steps, sampled and trained tokens, grader calls and seconds, eval
    and
    inference tokens of this project, newest bucket first, each with its cost; ``totals`` sums every
    matched
    record.

    Args:
        start_time (int | None | Unset): Unix seconds: records of attempts started at or after it.
        end_time (int | None | Unset): Unix seconds: records of attempts started before it.
        job_id (None | str | Unset): Only this job's attempts (404: not this project's).
        kind (None | Unset | UsageKind): Only records of this kind: job, eval, session, inference,
            serving.
        group_by (GetUsageGroupBy | Unset): day: one bucket a UTC day; job: one a job; attempt:
            one an attempt of a job. Default: 'day'.
        limit (int | Unset): Buckets at most (totals cover every matched record). Default: 100.
        authorization (None | str | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[ErrorResponse | UsagePage]
    """

    kwargs = _get_kwargs(
        start_time=start_time,
        end_time=end_time,
        job_id=job_id,
        kind=kind,
        group_by=group_by,
        limit=limit,
        authorization=authorization,
    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)


def sync(
    *,
    client: AuthenticatedClient | Client,
    start_time: int | None | Unset = UNSET,
    end_time: int | None | Unset = UNSET,
    job_id: None | str | Unset = UNSET,
    kind: None | Unset | UsageKind = UNSET,
    group_by: GetUsageGroupBy | Unset = "day",
    limit: int | Unset = 100,
    authorization: None | str | Unset = UNSET,
) -> ErrorResponse | UsagePage | None:
    """Get Usage

     Device-seconds (by device kind), steps, sampled and trained tokens, grader calls and seconds, eval
    and
    inference tokens of this project, newest bucket first, each with its cost; ``totals`` sums every
    matched
    record.

    Args:
        start_time (int | None | Unset): Unix seconds: records of attempts started at or after it.
        end_time (int | None | Unset): Unix seconds: records of attempts started before it.
        job_id (None | str | Unset): Only this job's attempts (404: not this project's).
        kind (None | Unset | UsageKind): Only records of this kind: job, eval, session, inference,
            serving.
        group_by (GetUsageGroupBy | Unset): day: one bucket a UTC day; job: one a job; attempt:
            one an attempt of a job. Default: 'day'.
        limit (int | Unset): Buckets at most (totals cover every matched record). Default: 100.
        authorization (None | str | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        ErrorResponse | UsagePage
    """

    return sync_detailed(
        client=client,
        start_time=start_time,
        end_time=end_time,
        job_id=job_id,
        kind=kind,
        group_by=group_by,
        limit=limit,
        authorization=authorization,
    ).parsed


async def asyncio_detailed(
    *,
    client: AuthenticatedClient | Client,
    start_time: int | None | Unset = UNSET,
    end_time: int | None | Unset = UNSET,
    job_id: None | str | Unset = UNSET,
    kind: None | Unset | UsageKind = UNSET,
    group_by: GetUsageGroupBy | Unset = "day",
    limit: int | Unset = 100,
    authorization: None | str | Unset = UNSET,
) -> Response[ErrorResponse | UsagePage]:
    """Get Usage

     Device-seconds (by device kind), steps, sampled and trained tokens, grader calls and seconds, eval
    and
    inference tokens of this project, newest bucket first, each with its cost; ``totals`` sums every
    matched
    record.

    Args:
        start_time (int | None | Unset): Unix seconds: records of attempts started at or after it.
        end_time (int | None | Unset): Unix seconds: records of attempts started before it.
        job_id (None | str | Unset): Only this job's attempts (404: not this project's).
        kind (None | Unset | UsageKind): Only records of this kind: job, eval, session, inference,
            serving.
        group_by (GetUsageGroupBy | Unset): day: one bucket a UTC day; job: one a job; attempt:
            one an attempt of a job. Default: 'day'.
        limit (int | Unset): Buckets at most (totals cover every matched record). Default: 100.
        authorization (None | str | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[ErrorResponse | UsagePage]
    """

    kwargs = _get_kwargs(
        start_time=start_time,
        end_time=end_time,
        job_id=job_id,
        kind=kind,
        group_by=group_by,
        limit=limit,
        authorization=authorization,
    )

    response = await client.get_async_httpx_client().request(**kwargs)

    return _build_response(client=client, response=response)


async def asyncio(
    *,
    client: AuthenticatedClient | Client,
    start_time: int | None | Unset = UNSET,
    end_time: int | None | Unset = UNSET,
    job_id: None | str | Unset = UNSET,
    kind: None | Unset | UsageKind = UNSET,
    group_by: GetUsageGroupBy | Unset = "day",
    limit: int | Unset = 100,
    authorization: None | str | Unset = UNSET,
) -> ErrorResponse | UsagePage | None:
    """Get Usage

     Device-seconds (by device kind), steps, sampled and trained tokens, grader calls and seconds, eval
    and
    inference tokens of this project, newest bucket first, each with its cost; ``totals`` sums every
    matched
    record.

    Args:
        start_time (int | None | Unset): Unix seconds: records of attempts started at or after it.
        end_time (int | None | Unset): Unix seconds: records of attempts started before it.
        job_id (None | str | Unset): Only this job's attempts (404: not this project's).
        kind (None | Unset | UsageKind): Only records of this kind: job, eval, session, inference,
            serving.
        group_by (GetUsageGroupBy | Unset): day: one bucket a UTC day; job: one a job; attempt:
            one an attempt of a job. Default: 'day'.
        limit (int | Unset): Buckets at most (totals cover every matched record). Default: 100.
        authorization (None | str | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        ErrorResponse | UsagePage
    """

    return (
        await asyncio_detailed(
            client=client,
            start_time=start_time,
            end_time=end_time,
            job_id=job_id,
            kind=kind,
            group_by=group_by,
            limit=limit,
            authorization=authorization,
        )
    ).parsed
