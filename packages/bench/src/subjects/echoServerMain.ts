// Entry of the echo baseline's child process: serves, prints its port, runs until killed.
import { serveEcho } from './echoService.js';

const { port } = await serveEcho();
console.log(`echo listening on 127.0.0.1:${port}`);
