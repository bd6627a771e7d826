"""Tests of m3gym.audit's tool-necessity measurements (tool_necessity, readers, tools_cli)."""
