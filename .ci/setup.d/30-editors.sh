# Real LSP clients for tests/test_real_editors.py: Debian's Neovim 0.7 and Emacs 28 with eglot.
apt_install neovim emacs-nox elpa-eglot
