"""The official Python SDK client (`mcp`, pinned in the reference venv) through the client
kit's flows against a real `mcp-witness serve`: roots (and a change of roots announced with
`send_roots_list_changed`), sampling, elicitation (form, and URL mode: the page serve names is
opened on loopback only, and the completion notification awaited), logging and completion. Usage: flows.py <mcp-witness> <log>. Prints a JSON summary of what each
step returned; mcp-witness analyze judges the log."""

import json
import sys
import urllib.parse
import urllib.request

import anyio
from mcp import ClientSession, StdioServerParameters, types
from mcp.client.stdio import stdio_client


async def main(witness: str, log: str) -> None:
    summary: dict = {"steps": {}}
    messages: list = []
    roots = [types.Root(uri="file:///tmp/python-sdk-root", name="py root")]
    urls: list = []
    completed: list = []
    complete_seen = anyio.Event()

    async def list_roots(context):
        return types.ListRootsResult(roots=list(roots))

    async def sampling(context, params):
        return types.CreateMessageResult(
            role="assistant",
            content=types.TextContent(type="text", text="python"),
            model="python-sdk-test-model",
            stopReason="endTurn",
        )

    async def elicitation(context, params):
        if getattr(params, "mode", None) == "url":
            # Consent only; the page is opened after the answer, as a user would.
            urls.append(params.url)
            return types.ElicitResult(action="accept")
        return types.ElicitResult(action="accept", content={"name": "python", "count": 2})

    async def logging(params):
        messages.append(params.level)

    async def on_message(message):
        if isinstance(message, types.ElicitCompleteNotification):
            completed.append(message.params.elicitation_id)
            complete_seen.set()

    def open_page(url: str) -> int:
        # Only serve's loopback page is ever opened.
        parts = urllib.parse.urlsplit(url)
        if parts.scheme != "http" or parts.hostname not in ("127.0.0.1", "::1"):
            raise ValueError(f"not a loopback page: {url!r}")
        with urllib.request.urlopen(url, timeout=10) as r:
            return r.status

    server = StdioServerParameters(command=witness, args=["serve", "--log", log])
    async with stdio_client(server) as (read, write):
        async with ClientSession(
            read,
            write,
            list_roots_callback=list_roots,
            sampling_callback=sampling,
            elicitation_callback=elicitation,
            logging_callback=logging,
            message_handler=on_message,
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
            # Roots change: announced, then serve asks again and gets the new list.
            roots.append(types.Root(uri="file:///tmp/python-sdk-root-2", name="py root 2"))
            await session.send_roots_list_changed()
            await step("witness_ask_url_elicitation", session.call_tool("witness_ask_url_elicitation", {}))
            summary["url"] = urls[-1] if urls else None
            if urls:
                summary["page_status"] = await anyio.to_thread.run_sync(open_page, urls[-1])
                with anyio.move_on_after(10):
                    await complete_seen.wait()
            summary["completed"] = completed
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
