module notify.local/kube-router

go 1.24.0

require github.com/cloudnativelabs/kube-router/v2 v2.1.0 // indirect
