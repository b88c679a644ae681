# Generated from openapi.json by `make openapi` (scripts/openapi.py): do not edit by hand.
from http import HTTPStatus
from typing import Any
from urllib.parse import quote

import httpx

from ... import errors
from ...client import AuthenticatedClient, Client
from ...models.error_response import ErrorResponse
from ...models.job import Job
from ...models.job_budget import JobBudget
from ...types import UNSET, Response, Unset


def _get_kwargs(
    fine_tuning_job_id: str,
    *,
    body: JobBudget,
    authorization: None | str | Unset = UNSET,
) -> dict[str, Any]:
    headers: dict[str, Any] = {}
    if not isinstance(authorization, Unset):
        headers["authorization"] = authorization

    _kwargs: dict[str, Any] = {
        "method": "post",
        "url": "/v1/fine_tuning/jobs/{fine_tuning_job_id}/budget".format(
            fine_tuning_job_id=quote(str(fine_tuning_job_id), safe=""),
        ),
    }

    _kwargs["json"] = body.to_dict()

    headers["Content-Type"] = "application/json"

    _kwargs["headers"] = headers
    return _kwargs


def _parse_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> ErrorResponse | Job | None:
    if response.status_code == 200:
        response_200 = Job.from_dict(response.json())

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


def _build_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> Response[ErrorResponse | Job]:
    return Response(
        status_code=HTTPStatus(response.status_code),
        content=response.content,
        headers=response.headers,
        parsed=_parse_response(client=client, response=response),
    )


def sync_detailed(
    fine_tuning_job_id: str,
    *,
    client: AuthenticatedClient | Client,
    body: JobBudget,
    authorization: None | str | Unset = UNSET,
) -> Response[ErrorResponse | Job]:
    """Set Budget

     Replace the job's budget (``max_cost``, ``max_device_hours``; both null: none). A job paused at its
    cap
    stays paused until it is resumed; the change is logged for the operator.

    Args:
        fine_tuning_job_id (str):
        authorization (None | str | Unset):
        body (JobBudget): A job's budget: it pauses at a checkpoint when its cost reaches either
            cap (a warning at 80 %). Body of
            ``POST /v1/fine_tuning/jobs/{id}/budget`` too, which replaces it (both null: no budget).

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[ErrorResponse | Job]
    """

    kwargs = _get_kwargs(
        fine_tuning_job_id=fine_tuning_job_id,
        body=body,
        authorization=authorization,
    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)


def sync(
    fine_tuning_job_id: str,
    *,
    client: AuthenticatedClient | Client,
    body: JobBudget,
    authorization: None | str | Unset = UNSET,
) -> ErrorResponse | Job | None:
    """Set Budget

     Replace the job's budget (``max_cost``, ``max_device_hours``; both null: none). A job paused at its
    cap
    stays paused until it is resumed; the change is logged for the operator.

    Args:
        fine_tuning_job_id (str):
        authorization (None | str | Unset):
        body (JobBudget): A job's budget: it pauses at a checkpoint when its cost reaches either
            cap (a warning at 80 %). Body of
            ``POST /v1/fine_tuning/jobs/{id}/budget`` too, which replaces it (both null: no budget).

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        ErrorResponse | Job
    """

    return sync_detailed(
        fine_tuning_job_id=fine_tuning_job_id,
        client=client,
        body=body,
        authorization=authorization,
    ).parsed


async def asyncio_detailed(
    fine_tuning_job_id: str,
    *,
    client: AuthenticatedClient | Client,
    body: JobBudget,
    authorization: None | str | Unset = UNSET,
) -> Response[ErrorResponse | Job]:
    """Set Budget

     Replace the job's budget (``max_cost``, ``max_device_hours``; both null: none). A job paused at its
    cap
    stays paused until it is resumed; the change is logged for the operator.

    Args:
        fine_tuning_job_id (str):
        authorization (None | str | Unset):
        body (JobBudget): A job's budget: it pauses at a checkpoint when its cost reaches either
            cap (a warning at 80 %). Body of
            ``POST /v1/fine_tuning/jobs/{id}/budget`` too, which replaces it (both null: no budget).

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[ErrorResponse | Job]
    """

    kwargs = _get_kwargs(
        fine_tuning_job_id=fine_tuning_job_id,
        body=body,
        authorization=authorization,
    )

    response = await client.get_async_httpx_client().request(**kwargs)

    return _build_response(client=client, response=response)


async def asyncio(
    fine_tuning_job_id: str,
    *,
    client: AuthenticatedClient | Client,
    body: JobBudget,
    authorization: None | str | Unset = UNSET,
) -> ErrorResponse | Job | None:
    """Set Budget

     Replace the job's budget (``max_cost``, ``max_device_hours``; both null: none). A job paused at its
    cap
    stays paused until it is resumed; the change is logged for the operator.

    Args:
        fine_tuning_job_id (str):
        authorization (None | str | Unset):
        body (JobBudget): A job's budget: it pauses at a checkpoint when its cost reaches either
            cap (a warning at 80 %). Body of
            ``POST /v1/fine_tuning/jobs/{id}/budget`` too, which replaces it (both null: no budget).

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        ErrorResponse | Job
    """

    return (
        await asyncio_detailed(
            fine_tuning_job_id=fine_tuning_job_id,
            client=client,
            body=body,
            authorization=authorization,
        )
    ).parsed
