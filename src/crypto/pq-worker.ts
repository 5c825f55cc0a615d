// Worker thread for PQC sign/verify (see worker-pool.ts): the same pqc.ts the main thread uses, behind the
// shared request/response protocol.
import { TransferredReply, serveRequests } from '../worker-thread/index.ts';
import { isPqcAlgorithm, type PqcAlgorithm } from './algorithms.ts';
import { signPqc, verifyPqc } from './pqc.ts';

export type PqcWorkerProtocol = {
  sign: { request: { algorithm: PqcAlgorithm; key: Uint8Array; input: Uint8Array }; response: Uint8Array };
  verify: {
    request: { algorithm: PqcAlgorithm; key: Uint8Array; input: Uint8Array; signature: Uint8Array };
    response: boolean;
  };
};

function checkAlgorithm(algorithm: string): void {
  if (!isPqcAlgorithm(algorithm)) throw new Error(`unsupported PQC algorithm ${String(algorithm)}`);
}

// Errors cross the thread boundary as their message only: no key material is ever echoed back.
serveRequests<PqcWorkerProtocol>({
  sign({ algorithm, key, input }) {
    checkAlgorithm(algorithm);
    const signature = signPqc(algorithm, key, input);
    return new TransferredReply(signature, [signature.buffer as ArrayBuffer]);
  },
  verify({ algorithm, key, input, signature }) {
    checkAlgorithm(algorithm);
    return verifyPqc(algorithm, key, input, signature);
  },
});
