// Approvals through the official TypeScript SDK client (1.x, the
// 2025-11-25 wire over Streamable HTTP): a `confirm` tool asks the user
// with elicitation/create; the SDK's elicitation handler approves, then
// declines; a client that declared no elicitation is refused.
//
// usage: node approvals.mjs http://127.0.0.1:PORT/mcp
import assert from "node:assert/strict";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { ElicitRequestSchema } from "@modelcontextprotocol/sdk/types.js";

const url = new URL(process.argv[2]);
const ARGS = { role: "Software Engineer", level: "senior" };

async function connect(capabilities, answer) {
  const client = new Client({ name: "sdk-approvals", version: "1.0.0" }, { capabilities });
  const asked = [];
  if (answer) {
    client.setRequestHandler(ElicitRequestSchema, async (request) => {
      asked.push(request.params.message);
      return answer;
    });
  }
  await client.connect(new StreamableHTTPClientTransport(url));
  return { client, asked };
}

const text = (result) => (result.content ?? []).map((c) => c.text ?? "").join(" ");

// The user approves: the tool runs, after exactly one question naming the call.
{
  const yes = { action: "accept", content: { approve: true } };
  const { client, asked } = await connect({ elicitation: {} }, yes);
  const result = await client.callTool({ name: "get-compensation-info", arguments: ARGS });
  assert.notEqual(result.isError, true, text(result));
  assert.ok(result.structuredContent, "structured salary band");
  assert.equal(asked.length, 1, "one question");
  assert.match(asked[0], /Software Engineer/);
  // Another call asks again: a yes is good for one call.
  await client.callTool({ name: "get-compensation-info", arguments: ARGS });
  assert.equal(asked.length, 2, "asked again for the next call");
  // Directory look-ups ask nothing.
  await client.callTool({ name: "get-employee-details", arguments: { employeeId: "AliceJohnson" } });
  assert.equal(asked.length, 2);
  await client.close();
  console.log("ok - approved in the client: served once per yes");
}

// The user declines (and, separately, cancels): nothing runs.
for (const answer of [{ action: "decline" }, { action: "cancel" }, { action: "accept", content: { approve: false } }]) {
  const { client } = await connect({ elicitation: {} }, answer);
  const result = await client.callTool({ name: "get-compensation-info", arguments: ARGS });
  assert.equal(result.isError, true, JSON.stringify(result));
  assert.ok(!result.structuredContent, "no data after a no");
  await client.close();
  console.log(`ok - ${JSON.stringify(answer)}: refused (${text(result).slice(0, 60)}…)`);
}

// A client that cannot ask its user: refused with a reason a model can act on.
{
  const { client } = await connect({}, null);
  const result = await client.callTool({ name: "get-compensation-info", arguments: ARGS });
  assert.equal(result.isError, true, JSON.stringify(result));
  assert.match(text(result), /confirm/);
  await client.close();
  console.log("ok - no elicitation capability: refused, told why");
}
