module github.com/onelayerdown/runner

go 1.26
