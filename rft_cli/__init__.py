"""``rft``: the command line of the RFT service, built on the generated client ``rft_client`` (clients/python).

Every request goes through the generated client, so the CLI breaks at ``make check-openapi`` time, not at a
user's, when the API changes shape.
"""
