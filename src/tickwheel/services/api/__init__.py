"""The HTTP API service (`python -m tickwheel.services.api`): FastAPI on uvicorn, thin over
`tickwheel.sdk`. See docs/api.md and decision 0060."""
