/** The console's entry point (bundled by scripts/build.mjs into console.js and console.css). */
import '@xterm/xterm/css/xterm.css';
import './styles.css';

import { startApp } from './app.js';
import { installStyleNonce } from './nonce.js';

// document.currentScript is this (classic, deferred) script while it runs, with the page's nonce.
installStyleNonce(document, document.currentScript);
startApp(document, sessionStorage, location.href);
