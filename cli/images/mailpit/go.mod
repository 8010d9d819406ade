module notify.local/mailpit

go 1.26.0

require github.com/axllent/mailpit v1.33.1
