# Generated from openapi.json by `make openapi` (scripts/openapi.py): do not edit by hand.
from http import HTTPStatus
from typing import Any
from urllib.parse import quote

import httpx

from ... import errors
from ...client import AuthenticatedClient, Client
from ...models.error_response import ErrorResponse
from ...models.report_metrics import ReportMetrics
from ...models.run_step import RunStep
from ...types import UNSET, Response, Unset


def _get_kwargs(
    training_run_id: str,
    *,
    body: ReportMetrics,
    authorization: None | str | Unset = UNSET,
) -> dict[str, Any]:
    headers: dict[str, Any] = {}
    if not isinstance(authorization, Unset):
        headers["authorization"] = authorization

    _kwargs: dict[str, Any] = {
        "method": "post",
        "url": "/v1/training_runs/{training_run_id}/metrics".format(
            training_run_id=quote(str(training_run_id), safe=""),
        ),
    }

    _kwargs["json"] = body.to_dict()

    headers["Content-Type"] = "application/json"

    _kwargs["headers"] = headers
    return _kwargs


def _parse_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> ErrorResponse | RunStep | None:
    if response.status_code == 200:
        response_200 = RunStep.from_dict(response.json())

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
) -> Response[ErrorResponse | RunStep]:
    return Response(
        status_code=HTTPStatus(response.status_code),
        content=response.content,
        headers=response.headers,
        parsed=_parse_response(client=client, response=response),
    )


def sync_detailed(
    training_run_id: str,
    *,
    client: AuthenticatedClient | Client,
    body: ReportMetrics,
    authorization: None | str | Unset = UNSET,
) -> Response[ErrorResponse | RunStep]:
    """Report Training Run Metrics

     Report metrics of one step of your loop (e.g. ``{"step": 3, "metrics": {"reward": 0.75}}``): the
    dashboard
    draws them beside the loss.

    Args:
        training_run_id (str):
        authorization (None | str | Unset):
        body (ReportMetrics): Metrics of one step of your loop that the service cannot see (a
            reward, an accuracy), drawn beside the loss.
            A step reported again merges its new values over the old.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[ErrorResponse | RunStep]
    """

    kwargs = _get_kwargs(
        training_run_id=training_run_id,
        body=body,
        authorization=authorization,
    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)


def sync(
    training_run_id: str,
    *,
    client: AuthenticatedClient | Client,
    body: ReportMetrics,
    authorization: None | str | Unset = UNSET,
) -> ErrorResponse | RunStep | None:
    """Report Training Run Metrics

     Report metrics of one step of your loop (e.g. ``{"step": 3, "metrics": {"reward": 0.75}}``): the
    dashboard
    draws them beside the loss.

    Args:
        training_run_id (str):
        authorization (None | str | Unset):
        body (ReportMetrics): Metrics of one step of your loop that the service cannot see (a
            reward, an accuracy), drawn beside the loss.
            A step reported again merges its new values over the old.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        ErrorResponse | RunStep
    """

    return sync_detailed(
        training_run_id=training_run_id,
        client=client,
        body=body,
        authorization=authorization,
    ).parsed


async def asyncio_detailed(
    training_run_id: str,
    *,
    client: AuthenticatedClient | Client,
    body: ReportMetrics,
    authorization: None | str | Unset = UNSET,
) -> Response[ErrorResponse | RunStep]:
    """Report Training Run Metrics

     Report metrics of one step of your loop (e.g. ``{"step": 3, "metrics": {"reward": 0.75}}``): the
    dashboard
    draws them beside the loss.

    Args:
        training_run_id (str):
        authorization (None | str | Unset):
        body (ReportMetrics): Metrics of one step of your loop that the service cannot see (a
            reward, an accuracy), drawn beside the loss.
            A step reported again merges its new values over the old.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[ErrorResponse | RunStep]
    """

    kwargs = _get_kwargs(
        training_run_id=training_run_id,
        body=body,
        authorization=authorization,
    )

    response = await client.get_async_httpx_client().request(**kwargs)

    return _build_response(client=client, response=response)


async def asyncio(
    training_run_id: str,
    *,
    client: AuthenticatedClient | Client,
    body: ReportMetrics,
    authorization: None | str | Unset = UNSET,
) -> ErrorResponse | RunStep | None:
    """Report Training Run Metrics

     Report metrics of one step of your loop (e.g. ``{"step": 3, "metrics": {"reward": 0.75}}``): the
    dashboard
    draws them beside the loss.

    Args:
        training_run_id (str):
        authorization (None | str | Unset):
        body (ReportMetrics): Metrics of one step of your loop that the service cannot see (a
            reward, an accuracy), drawn beside the loss.
            A step reported again merges its new values over the old.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        ErrorResponse | RunStep
    """

    return (
        await asyncio_detailed(
            training_run_id=training_run_id,
            client=client,
            body=body,
            authorization=authorization,
        )
    ).parsed
