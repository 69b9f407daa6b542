#!/bin/sh
# The stream function's handler (AWS Lambda Web Adapter, response_stream mode): its web server.
exec python3 -m handlers.stream_server
