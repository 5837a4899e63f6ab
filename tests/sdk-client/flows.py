"""The official Python SDK client (`mcp`, pinned in the reference venv) through the client
kit's flows against a real `mcp-witness serve`: roots, sampling, elicitation (form), logging
and completion. Usage: flows.py <mcp-witness> <log>. Prints a JSON summary of what each
step returned; mcp-witness analyze judges the log."""

import json
import sys

import anyio
from mcp import ClientSession, StdioServerParameters, types
from mcp.client.stdio import stdio_client


async def main(witness: str, log: str) -> None:
    summary: dict = {"steps": {}}
    messages: list = []

    async def list_roots(context):
        return types.ListRootsResult(roots=[types.Root(uri="file:///tmp/python-sdk-root", name="py root")])

    async def sampling(context, params):
        return types.CreateMessageResult(
            role="assistant",
            content=types.TextContent(type="text", text="python"),
            model="python-sdk-test-model",
            stopReason="endTurn",
        )

    async def elicitation(context, params):
        return types.ElicitResult(action="accept", content={"name": "python", "count": 2})

    async def logging(params):
        messages.append(params.level)

    server = StdioServerParameters(command=witness, args=["serve", "--log", log])
    async with stdio_client(server) as (read, write):
        async with ClientSession(
            read,
            write,
            list_roots_callback=list_roots,
            sampling_callback=sampling,
            elicitation_callback=elicitation,
            logging_callback=logging,
        ) as session:
            await session.initialize()

            async def step(name, coro):
                try:
                    r = await coro
                    summary["steps"][name] = r.model_dump(mode="json", exclude_none=True)
                except Exception as e:  # recorded, judged from the log
                    summary["steps"][name] = {"exception": repr(e)}

            for tool in ["witness_ask_roots", "witness_ask_sampling", "witness_ask_elicitation"]:
                await step(tool, session.call_tool(tool, {}))
            await step("setLevel", session.set_logging_level("debug"))
            await step("witness_log_all_levels", session.call_tool("witness_log_all_levels", {}))
            await step("witness_status", session.call_tool("witness_status", {}))
            ref = types.PromptReference(type="ref/prompt", name="witness_complete_prompt")
            await step("complete_language", session.complete(ref, {"name": "language", "value": "py"}))
            await step(
                "complete_framework",
                session.complete(ref, {"name": "framework", "value": ""}, context_arguments={"language": "python"}),
            )
            await step(
                "get_prompt",
                session.get_prompt("witness_complete_prompt", {"language": "python", "framework": "django"}),
            )
    summary["log_levels"] = messages
    print(json.dumps(summary))


if __name__ == "__main__":
    anyio.run(main, sys.argv[1], sys.argv[2])
