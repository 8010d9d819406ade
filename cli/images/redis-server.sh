#!/bin/sh
# /usr/local/bin/redis-server of localhost/notify-dev-redis (cli/bin/images.sh), ahead of Debian's /usr/bin/redis-server
# on PATH. The chart runs `redis-server --save "" ...` with no configuration file and no password, and the services
# reach it from other pods: Debian's build then starts in protected mode, which refuses every client but loopback ones.
# The official image turns protected mode off in its build; this does it on the command line, unless the arguments
# set it themselves.
case " $* " in
  *" --protected-mode "*) ;;
  *) set -- "$@" --protected-mode no ;;
esac
exec /usr/bin/redis-server "$@"
