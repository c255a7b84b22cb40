"""MCP glue: the recall server (`manage.py mcp_server`) and the capture proxy's latency
measurement. The capture proxy itself is `hindsight_client.mcp_proxy` (standard library only)."""
