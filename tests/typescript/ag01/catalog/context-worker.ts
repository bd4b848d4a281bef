// Run in a worker thread by call_context_default_tainted: the call context a new thread starts with.

import { parentPort } from "node:worker_threads";

import { currentCallContext } from "../agent/types.js";

const cc = currentCallContext();
parentPort?.postMessage({ tainted: cc.tainted, iter: cc.iter });
