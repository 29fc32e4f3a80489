/**
 * One MCP tools/call through the in-cluster gateway (stateless Streamable HTTP, JSON answers),
 * with the e2e tenant's key: the tool result's error flag and its text content joined.
 */
export async function mcpToolCall(
  tool: string,
  args: Record<string, unknown>,
  timeoutMs = 240_000,
): Promise<{ isError?: boolean; text: string }> {
  const res = await fetch(`${process.env.E2E_GATEWAY_URL}/mcp`, {
    method: 'POST',
    headers: {
      authorization: `Bearer ${process.env.E2E_GATEWAY_API_KEY}`,
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
    },
    body: JSON.stringify({
      jsonrpc: '2.0',
      id: 1,
      method: 'tools/call',
      params: { name: tool, arguments: args },
    }),
    signal: AbortSignal.timeout(timeoutMs),
  });
  const body = (await res.json()) as { result?: { isError?: boolean; content?: Array<{ text?: string }> } };
  return {
    isError: body.result?.isError,
    text: (body.result?.content ?? []).map((c) => c.text ?? '').join('\n'),
  };
}
