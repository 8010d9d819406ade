// Package mailpit pins the Mailpit release of the mail-sink dev image (cli/bin/images.sh): go build builds
// github.com/axllent/mailpit at the version go.mod requires.
package mailpit
