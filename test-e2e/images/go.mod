module github.com/sandboxsession/platform/test-e2e/images

go 1.23
