/// HTTP/2 transport: epoll event loop, TLS over memory BIOs, nghttp2 client pools and server sessions.
public enum ClarionHTTP2 {}
