# Generated from openapi.json by `make openapi` (scripts/openapi.py): do not edit by hand.
from http import HTTPStatus
from typing import Any
from urllib.parse import quote

import httpx

from ... import errors
from ...client import AuthenticatedClient, Client
from ...models.error_response import ErrorResponse
from ...models.metrics_page import MetricsPage
from ...types import UNSET, Response, Unset


def _get_kwargs(
    fine_tuning_job_id: str,
    *,
    limit: int | Unset = 100,
    after: int | None | Unset = UNSET,
    authorization: None | str | Unset = UNSET,
) -> dict[str, Any]:
    headers: dict[str, Any] = {}
    if not isinstance(authorization, Unset):
        headers["authorization"] = authorization

    params: dict[str, Any] = {}

    params["limit"] = limit

    json_after: int | None | Unset
    if isinstance(after, Unset):
        json_after = UNSET
    else:
        json_after = after
    params["after"] = json_after

    params = {k: v for k, v in params.items() if v is not UNSET and v is not None}

    _kwargs: dict[str, Any] = {
        "method": "get",
        "url": "/v1/fine_tuning/jobs/{fine_tuning_job_id}/metrics".format(
            fine_tuning_job_id=quote(str(fine_tuning_job_id), safe=""),
        ),
        "params": params,
    }

    _kwargs["headers"] = headers
    return _kwargs


def _parse_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> ErrorResponse | MetricsPage | None:
    if response.status_code == 200:
        response_200 = MetricsPage.from_dict(response.json())

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
) -> Response[ErrorResponse | MetricsPage]:
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
    limit: int | Unset = 100,
    after: int | None | Unset = UNSET,
    authorization: None | str | Unset = UNSET,
) -> Response[ErrorResponse | MetricsPage]:
    """List Metrics

     The per-step metric series, oldest first (rollouts left out: see …/samples), each with the job's
    running
    cost and, on a validation step, the reward gained over the base model and per unit of cost.

    Args:
        fine_tuning_job_id (str):
        limit (int | Unset):  Default: 100.
        after (int | None | Unset): Return steps after this one.
        authorization (None | str | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[ErrorResponse | MetricsPage]
    """

    kwargs = _get_kwargs(
        fine_tuning_job_id=fine_tuning_job_id,
        limit=limit,
        after=after,
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
    limit: int | Unset = 100,
    after: int | None | Unset = UNSET,
    authorization: None | str | Unset = UNSET,
) -> ErrorResponse | MetricsPage | None:
    """List Metrics

     The per-step metric series, oldest first (rollouts left out: see …/samples), each with the job's
    running
    cost and, on a validation step, the reward gained over the base model and per unit of cost.

    Args:
        fine_tuning_job_id (str):
        limit (int | Unset):  Default: 100.
        after (int | None | Unset): Return steps after this one.
        authorization (None | str | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        ErrorResponse | MetricsPage
    """

    return sync_detailed(
        fine_tuning_job_id=fine_tuning_job_id,
        client=client,
        limit=limit,
        after=after,
        authorization=authorization,
    ).parsed


async def asyncio_detailed(
    fine_tuning_job_id: str,
    *,
    client: AuthenticatedClient | Client,
    limit: int | Unset = 100,
    after: int | None | Unset = UNSET,
    authorization: None | str | Unset = UNSET,
) -> Response[ErrorResponse | MetricsPage]:
    """List Metrics

     The per-step metric series, oldest first (rollouts left out: see …/samples), each with the job's
    running
    cost and, on a validation step, the reward gained over the base model and per unit of cost.

    Args:
        fine_tuning_job_id (str):
        limit (int | Unset):  Default: 100.
        after (int | None | Unset): Return steps after this one.
        authorization (None | str | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[ErrorResponse | MetricsPage]
    """

    kwargs = _get_kwargs(
        fine_tuning_job_id=fine_tuning_job_id,
        limit=limit,
        after=after,
        authorization=authorization,
    )

    response = await client.get_async_httpx_client().request(**kwargs)

    return _build_response(client=client, response=response)


async def asyncio(
    fine_tuning_job_id: str,
    *,
    client: AuthenticatedClient | Client,
    limit: int | Unset = 100,
    after: int | None | Unset = UNSET,
    authorization: None | str | Unset = UNSET,
) -> ErrorResponse | MetricsPage | None:
    """List Metrics

     The per-step metric series, oldest first (rollouts left out: see …/samples), each with the job's
    running
    cost and, on a validation step, the reward gained over the base model and per unit of cost.

    Args:
        fine_tuning_job_id (str):
        limit (int | Unset):  Default: 100.
        after (int | None | Unset): Return steps after this one.
        authorization (None | str | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        ErrorResponse | MetricsPage
    """

    return (
        await asyncio_detailed(
            fine_tuning_job_id=fine_tuning_job_id,
            client=client,
            limit=limit,
            after=after,
            authorization=authorization,
        )
    ).parsed
