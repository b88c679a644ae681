# Generated from openapi.json by `make openapi` (scripts/openapi.py): do not edit by hand.
from http import HTTPStatus
from typing import Any

import httpx

from ... import errors
from ...client import AuthenticatedClient, Client
from ...models.error_response import ErrorResponse
from ...models.job_create import JobCreate
from ...models.job_estimate import JobEstimate
from ...types import UNSET, Response, Unset


def _get_kwargs(
    *,
    body: JobCreate,
    device_kind: None | str | Unset = UNSET,
    authorization: None | str | Unset = UNSET,
) -> dict[str, Any]:
    headers: dict[str, Any] = {}
    if not isinstance(authorization, Unset):
        headers["authorization"] = authorization

    params: dict[str, Any] = {}

    json_device_kind: None | str | Unset
    if isinstance(device_kind, Unset):
        json_device_kind = UNSET
    else:
        json_device_kind = device_kind
    params["device_kind"] = json_device_kind

    params = {k: v for k, v in params.items() if v is not UNSET and v is not None}

    _kwargs: dict[str, Any] = {
        "method": "post",
        "url": "/v1/fine_tuning/jobs/estimate",
        "params": params,
    }

    _kwargs["json"] = body.to_dict()

    headers["Content-Type"] = "application/json"

    _kwargs["headers"] = headers
    return _kwargs


def _parse_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> ErrorResponse | JobEstimate | None:
    if response.status_code == 200:
        response_200 = JobEstimate.from_dict(response.json())

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
) -> Response[ErrorResponse | JobEstimate]:
    return Response(
        status_code=HTTPStatus(response.status_code),
        content=response.content,
        headers=response.headers,
        parsed=_parse_response(client=client, response=response),
    )


def sync_detailed(
    *,
    client: AuthenticatedClient | Client,
    body: JobCreate,
    device_kind: None | str | Unset = UNSET,
    authorization: None | str | Unset = UNSET,
) -> Response[ErrorResponse | JobEstimate]:
    """Estimate Job

     What the job ``body`` (the body ``POST /v1/fine_tuning/jobs`` takes, checked the same way: the same
    4xx)
    would take and cost: step time, device time, cost at this project's prices, each with a range, what
    drives
    them, and how sure it is. Nothing is stored.

    Args:
        device_kind (None | str | Unset): Estimate for this device kind (default: what a worker
            gives).
        authorization (None | str | Unset):
        body (JobCreate): Body of ``POST /v1/fine_tuning/jobs``.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[ErrorResponse | JobEstimate]
    """

    kwargs = _get_kwargs(
        body=body,
        device_kind=device_kind,
        authorization=authorization,
    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)


def sync(
    *,
    client: AuthenticatedClient | Client,
    body: JobCreate,
    device_kind: None | str | Unset = UNSET,
    authorization: None | str | Unset = UNSET,
) -> ErrorResponse | JobEstimate | None:
    """Estimate Job

     What the job ``body`` (the body ``POST /v1/fine_tuning/jobs`` takes, checked the same way: the same
    4xx)
    would take and cost: step time, device time, cost at this project's prices, each with a range, what
    drives
    them, and how sure it is. Nothing is stored.

    Args:
        device_kind (None | str | Unset): Estimate for this device kind (default: what a worker
            gives).
        authorization (None | str | Unset):
        body (JobCreate): Body of ``POST /v1/fine_tuning/jobs``.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        ErrorResponse | JobEstimate
    """

    return sync_detailed(
        client=client,
        body=body,
        device_kind=device_kind,
        authorization=authorization,
    ).parsed


async def asyncio_detailed(
    *,
    client: AuthenticatedClient | Client,
    body: JobCreate,
    device_kind: None | str | Unset = UNSET,
    authorization: None | str | Unset = UNSET,
) -> Response[ErrorResponse | JobEstimate]:
    """Estimate Job

     What the job ``body`` (the body ``POST /v1/fine_tuning/jobs`` takes, checked the same way: the same
    4xx)
    would take and cost: step time, device time, cost at this project's prices, each with a range, what
    drives
    them, and how sure it is. Nothing is stored.

    Args:
        device_kind (None | str | Unset): Estimate for this device kind (default: what a worker
            gives).
        authorization (None | str | Unset):
        body (JobCreate): Body of ``POST /v1/fine_tuning/jobs``.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[ErrorResponse | JobEstimate]
    """

    kwargs = _get_kwargs(
        body=body,
        device_kind=device_kind,
        authorization=authorization,
    )

    response = await client.get_async_httpx_client().request(**kwargs)

    return _build_response(client=client, response=response)


async def asyncio(
    *,
    client: AuthenticatedClient | Client,
    body: JobCreate,
    device_kind: None | str | Unset = UNSET,
    authorization: None | str | Unset = UNSET,
) -> ErrorResponse | JobEstimate | None:
    """Estimate Job

     What the job ``body`` (the body ``POST /v1/fine_tuning/jobs`` takes, checked the same way: the same
    4xx)
    would take and cost: step time, device time, cost at this project's prices, each with a range, what
    drives
    them, and how sure it is. Nothing is stored.

    Args:
        device_kind (None | str | Unset): Estimate for this device kind (default: what a worker
            gives).
        authorization (None | str | Unset):
        body (JobCreate): Body of ``POST /v1/fine_tuning/jobs``.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        ErrorResponse | JobEstimate
    """

    return (
        await asyncio_detailed(
            client=client,
            body=body,
            device_kind=device_kind,
            authorization=authorization,
        )
    ).parsed
