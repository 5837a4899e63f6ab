"""The official Python SDK client (`mcp`, pinned in the reference venv) through every domain of
the client kit in one session against a real `mcp-witness serve`, in either era: the
list_changed cycle (tools, resources, prompts), then every `witness_ask_*` question serve lists
(roots, sampling, elicitation in each mode serve asks; legacy: then a roots change),
logging, completion, subscriptions and progress, wired as an SDK user wires them (`mcp.Client`
with its callbacks). What the SDK does is what the log shows: nothing here papers over it;
`mcp-witness analyze` judges the log.

Usage: flows.py <mcp-witness> <log> [legacy|modern]. `legacy` (the default) is
`mode="legacy"`, the initialize handshake; `modern` is `mode="auto"`, which probes
`server/discover` and speaks 2026-07-28 with serve. Prints a JSON summary of what each step
returned; exits 0 when the run finished (whatever the SDK did)."""

import json
import sys
import warnings

import anyio
import mcp
from mcp import Client, StdioServerParameters, types

COUNTER = "probe://counter"
WAIT = 3.0

DOMAINS = {
    "tools": ("witness_mutate_tools", "witness_probe_alpha", "witness_probe_beta"),
    "resources": ("witness_mutate_resources", "probe://alpha", "probe://beta"),
    "prompts": ("witness_mutate_prompts", "witness_alpha_prompt", "witness_beta_prompt"),
}


def dump(r):
    try:
        return r.model_dump(mode="json", exclude_none=True)
    except AttributeError:
        return repr(r)


async def main(witness: str, log: str, era: str) -> None:
    summary: dict = {"sdk_version": mcp_version(), "era": era, "steps": {}, "domains": {}}
    messages: list = []
    progress: list = []
    notified: dict = {d: anyio.Event() for d in DOMAINS}
    updated = anyio.Event()

    roots = [types.Root(uri="file:///tmp/python-sdk-root", name="py root")]
    roots_asked = []

    async def list_roots(context):
        roots_asked.append(len(roots))
        return types.ListRootsResult(roots=roots)

    async def sampling(context, params):
        return types.CreateMessageResult(
            role="assistant",
            content=types.TextContent(type="text", text="python"),
            model="python-sdk-test-model",
            stop_reason="endTurn",
        )

    async def elicitation(context, params):
        mode = getattr(params, "mode", None) or "form"
        summary.setdefault("elicitation_modes", []).append(mode)
        if mode == "url":
            return types.ElicitResult(action="accept")
        return types.ElicitResult(action="accept", content={"name": "python", "count": 2})

    async def logging(params):
        messages.append(params.level)

    async def on_message(message):
        method = getattr(message, "method", None)
        for d in DOMAINS:
            if method == f"notifications/{d}/list_changed":
                notified[d].set()
        if method == "notifications/resources/updated":
            updated.set()

    server = StdioServerParameters(command=witness, args=["serve", "--log", log])
    client = Client(
        server,
        mode="legacy" if era == "legacy" else "auto",
        list_roots_callback=list_roots,
        sampling_callback=sampling,
        elicitation_callback=elicitation,
        logging_callback=logging,
        message_handler=on_message,
        log_level="debug" if era == "modern" else None,
        client_info=types.Implementation(name=f"python-sdk-flows-{era}", version=mcp_version()),
        cache=None,
    )

    async def step(name, coro):
        try:
            r = await coro
            summary["steps"][name] = dump(r)
            return r
        except Exception as e:  # recorded, judged from the log
            summary["steps"][name] = {"exception": repr(e)}
            return None

    async def use(d, client, item):
        if d == "tools":
            return await client.call_tool(item, {})
        if d == "resources":
            return await client.read_resource(item)
        return await client.get_prompt(item)

    async def listed(d, client):
        if d == "tools":
            return [t.name for t in (await client.list_tools()).tools]
        if d == "resources":
            return [str(r.uri) for r in (await client.list_resources()).resources]
        return [p.name for p in (await client.list_prompts()).prompts]

    async with client:
        summary["protocol_version"] = client.protocol_version
        # The list_changed cycle. Legacy: the notification reaches the message handler.
        # Modern: only through a subscriptions/listen stream, opened for the three lists.
        for d, (mutate, alpha, beta) in DOMAINS.items():
            r: dict = {}
            r["initial"] = await listed(d, client)
            await step(f"{d}.alpha", use(d, client, alpha))
            if era == "modern":
                flags = {f"{d}_list_changed": True}
                try:
                    async with client.listen(**flags) as sub:
                        await step(f"{d}.mutate", client.call_tool(mutate, {}))
                        with anyio.move_on_after(WAIT):
                            async for event in sub:
                                r["event"] = type(event).__name__
                                break
                except Exception as e:
                    r["listen"] = repr(e)
                r["notified"] = "event" in r
            else:
                await step(f"{d}.mutate", client.call_tool(mutate, {}))
                with anyio.move_on_after(WAIT):
                    await notified[d].wait()
                r["notified"] = notified[d].is_set()
            if r["notified"]:
                r["relisted"] = await listed(d, client)
            await step(f"{d}.beta", use(d, client, beta))
            summary["domains"][d] = r

        # Every question serve asks (roots, sampling, elicitation in each mode it knows).
        asks = [t.name for t in (await client.list_tools()).tools if t.name.startswith("witness_ask_")]
        for tool in asks:
            await step(tool, client.call_tool(tool, {}))
        if era == "legacy":
            # The roots change: the SDK sends notifications/roots/list_changed; a server may ask again.
            roots.append(types.Root(uri="file:///tmp/python-sdk-root-2", name="py root 2"))
            await step("send_roots_list_changed", client.send_roots_list_changed())
            await anyio.sleep(0.5)
        summary["roots_asked"] = roots_asked
        if era == "legacy":
            await step("setLevel", client.set_logging_level("debug"))
        await step("witness_log_all_levels", client.call_tool("witness_log_all_levels", {}))
        await step("witness_status", client.call_tool("witness_status", {}))
        ref = types.PromptReference(type="ref/prompt", name="witness_complete_prompt")
        lang = await step("complete_language", client.complete(ref, {"name": "language", "value": "py"}))
        language = lang.completion.values[0] if lang and lang.completion.values else "python"
        fw = await step(
            "complete_framework",
            client.complete(ref, {"name": "framework", "value": ""}, context_arguments={"language": language}),
        )
        framework = fw.completion.values[0] if fw and fw.completion.values else "none"
        await step(
            "get_prompt",
            client.get_prompt("witness_complete_prompt", {"language": language, "framework": framework}),
        )

        # Subscriptions. Legacy: resources/subscribe, the update to the message handler, re-read,
        # unsubscribe. Modern: a listen stream with resourceSubscriptions, closed at the end.
        if era == "modern":
            try:
                async with client.listen(resource_subscriptions=[COUNTER]) as sub:
                    await step("witness_touch_resource", client.call_tool("witness_touch_resource", {}))
                    with anyio.move_on_after(WAIT):
                        async for event in sub:
                            summary["update"] = type(event).__name__
                            break
                    if "update" in summary:
                        await step("reread", client.read_resource(COUNTER))
            except Exception as e:
                summary["subscription_error"] = repr(e)
        else:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                await step("subscribe", client.subscribe_resource(COUNTER))
                await step("witness_touch_resource", client.call_tool("witness_touch_resource", {}))
                with anyio.move_on_after(WAIT):
                    await updated.wait()
                summary["update"] = updated.is_set()
                if updated.is_set():
                    await step("reread", client.read_resource(COUNTER))
                await step("unsubscribe", client.unsubscribe_resource(COUNTER))

        # Progress: a progress callback on the call, then the caller gives up (a cancelled
        # task scope): what the SDK sends then is what the log shows.
        got = anyio.Event()

        async def on_progress(p, total, message):
            progress.append({"progress": p, "total": total, "message": message})
            if len(progress) >= 3:
                got.set()

        async with anyio.create_task_group() as tg:

            async def slow():
                await step("witness_slow", client.call_tool("witness_slow", {}, progress_callback=on_progress))

            tg.start_soon(slow)
            with anyio.move_on_after(WAIT):
                await got.wait()
            tg.cancel_scope.cancel()
        summary["progress_seen"] = got.is_set()
        await step("after_progress", client.call_tool("witness_status", {}))
    summary["log_levels"] = messages
    summary["progress"] = progress
    print(json.dumps(summary))


def mcp_version() -> str:
    from importlib.metadata import version

    return version("mcp")


if __name__ == "__main__":
    era = sys.argv[3] if len(sys.argv) > 3 else "legacy"
    if era not in ("legacy", "modern"):
        sys.exit("usage: flows.py <mcp-witness> <log> [legacy|modern]")
    anyio.run(main, sys.argv[1], sys.argv[2], era)
