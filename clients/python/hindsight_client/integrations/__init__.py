"""Framework integrations, one module each, imported only when that framework is installed
(`pip install 'hindsight-client[langchain]'`, `[openai-agents]`, `[pydantic-ai]`):

* `hindsight_client.integrations.langchain`: a callback handler recording each run of a
  LangChain / LangGraph agent as one trajectory, recall as a tool and as a prompt block, and a
  `wrap_tool_call` hook that adds warnings to a tool's result;
* `hindsight_client.integrations.openai_agents`: a tracing processor turning each trace of the
  OpenAI Agents SDK into a trajectory, recall as a function tool, warnings as run hooks;
* `hindsight_client.integrations.pydantic_ai`: a PydanticAI capability doing all of it.

What they share (recall's prompt block and tool answer, the warning check beside a tool call)
is `hindsight_client.integrations.common`, standard library only.
"""
