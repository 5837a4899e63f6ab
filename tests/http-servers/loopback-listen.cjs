// Preloaded into Node servers that call `app.listen(PORT)` with no host (server-everything
// does): such a listen binds every interface, so this makes it bind 127.0.0.1 only and the
// tests stay on loopback. Used by tests/http_client.rs as `node --require <this> ...`.
const net = require("net");
const listen = net.Server.prototype.listen;
net.Server.prototype.listen = function (...args) {
  const port = args[0];
  const numeric = typeof port === "number" || (typeof port === "string" && /^\d+$/.test(port));
  if (numeric && typeof args[1] !== "string") {
    args.splice(1, 0, "127.0.0.1");
  }
  return listen.apply(this, args);
};
