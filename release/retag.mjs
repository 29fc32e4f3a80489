// node release/retag.mjs SRC.tar DST.tar REF: copies an oci-archive naming its image REF (e.g.
// localhost/sandbox-platform/operator:0.1.0). The manifest digest is unchanged; prints it.
import { retag } from './oci.mjs';

const [src, dst, ref] = process.argv.slice(2);
if (!src || !dst || !ref || !ref.includes(':')) {
  console.error('usage: retag.mjs SRC.tar DST.tar REPOSITORY:TAG');
  process.exit(2);
}
console.log(retag(src, dst, ref));
