"""`groundbot serve`: the ASGI app, its worker supervisor, metrics, claims of platform deliveries, the review page."""
