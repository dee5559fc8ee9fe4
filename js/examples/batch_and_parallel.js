// Several searches in one request, then independent calls in parallel with Promise.all.
const groups = await openclaw.tools.search(["current weather", "stock quote", "translate text"], { limit: 2 });
const [weather, quote] = await Promise.all([
  openclaw.tools.call("plugin:weather:current_weather", { city: "Lisbon" }),
  openclaw.tools.call("plugin:finance:get_stock_quote", { symbol: "AAPL" }),
]);
return {
  found: groups.results.map((g) => ({ query: g.query, ids: g.candidates.map((c) => c.id) })),
  weather: weather.result.details,
  quote: quote.result.details,
};
