import './base.css';
import './tree.css';
