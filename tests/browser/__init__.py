"""Browser tests of the web inspector: a real Chromium drives real `mnemodb serve --http`
and `mnemodb ui` processes. Marked `browser`; part of the full run, never of `--fast`."""
