#!/bin/sh
# The stream function's handler (AWS Lambda Web Adapter, response_stream mode): its web server.
# Started as a program, not by the Python runtime: the function's code and the layers' packages
# (Powertools) are put on the path as the runtime would.
export PYTHONPATH="/var/task:/opt/python/lib/python3.12/site-packages:/opt/python${PYTHONPATH:+:$PYTHONPATH}"
exec python3 -m handlers.stream_server
